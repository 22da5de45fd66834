import type { AgentMessage } from "../messages";
import { contentText } from "../messages";
import type { Summarizer, SummaryRequest, SummaryResult } from "./summarizer";

/*
 * The summarizer that works with no model and no network: deterministic, it extracts rather than
 * writes. Good enough to keep a compacted agent oriented (what the user wants, what was asked,
 * which files were touched, where things stand) and the default when nothing is configured.
 */

const GOAL_CHARS = 500;
const REQUEST_CHARS = 300;
const STATE_CHARS = 800;
const PREVIOUS_CHARS = 6000;
const MAX_REQUESTS = 30;
/** Requests of earlier compactions carried forward, the newest kept. */
const MAX_EARLIER_REQUESTS = 60;

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function userTexts(messages: readonly AgentMessage[]): string[] {
  return messages
    .filter((m) => m.role === "user")
    .map((m) => contentText((m as { content: unknown }).content))
    .filter((text) => text.trim().length > 0);
}

function lastAssistantText(messages: readonly AgentMessage[]): string | undefined {
  return messages
    .filter((m) => m.role === "assistant")
    .map((m) => contentText((m as { content: unknown }).content))
    .findLast((text) => text.trim());
}

/** The "## Goal" section of an earlier extractive summary, to keep the goal stable across compactions. */
function previousGoal(summary: string | undefined): string | undefined {
  const match = summary && /## Goal\n([^\n]+)/.exec(summary);
  return match ? match[1] : undefined;
}

/** The sections of an extractive summary, by heading. */
function sectionsOf(summary: string): Map<string, string> {
  const sections = new Map<string, string>();
  for (const part of summary.split(/\n\n(?=## )/)) {
    const match = /^## ([^\n]+)\n([\s\S]*)$/.exec(part);
    if (match) sections.set(match[1] as string, match[2] as string);
  }
  return sections;
}

/** The numbered requests of a section (a line saying how many were not shown is not one). */
function numbered(section: string | undefined): string[] {
  return (section ?? "").split("\n").flatMap((line) => {
    const match = /^\d+\. (.*)$/.exec(line);
    return match ? [match[1] as string] : [];
  });
}

/** A list of requests, the newest `max` shown and numbered by their place in the whole list. */
function requestList(requests: readonly string[], max: number): string {
  if (requests.length === 0) return "(none)";
  const shown = requests.slice(-max);
  const skipped = requests.length - shown.length;
  return [
    ...(skipped > 0 ? [`(${skipped} earlier requests not shown)`] : []),
    ...shown.map((text, i) => `${i + 1 + skipped}. ${clip(text, REQUEST_CHARS)}`),
  ].join("\n");
}

/**
 * What an earlier summary tells of the conversation before it. One of this summarizer's gives the
 * requests it carried and its own, oldest first, so chained compactions keep the newest of them
 * (and the text of a summary of the earlier layout, `## Earlier`, as it was); any other summary is
 * kept as text.
 */
function earlierSections(previous: string): string[] {
  const sections = sectionsOf(previous);
  if (!sections.has("User requests"))
    return [`## Earlier\n${clip(previous.replace(/^[^\n]*\n/, ""), PREVIOUS_CHARS)}`];
  const text = sections.get("Earlier");
  const requests = [
    ...numbered(sections.get("Earlier requests")),
    ...numbered(sections.get("User requests")),
  ];
  return [
    ...(text === undefined ? [] : [`## Earlier\n${clip(text, PREVIOUS_CHARS)}`]),
    `## Earlier requests\n${requestList(requests, MAX_EARLIER_REQUESTS)}`,
  ];
}

export class ExtractiveSummarizer implements Summarizer {
  readonly name = "extractive";

  async summarize(request: SummaryRequest): Promise<SummaryResult> {
    const messages = [...request.messages, ...(request.turnPrefix ?? [])];
    const requests = userTexts(messages);
    const goal =
      previousGoal(request.previousSummary) ?? (requests[0] ? clip(requests[0], GOAL_CHARS) : "(not stated)");
    const sections = [
      request.kind === "branch"
        ? "Summary of a branch that was left."
        : "Summary of the conversation so far (extracted).",
      `## Goal\n${goal}`,
    ];
    if (request.previousSummary) sections.push(...earlierSections(request.previousSummary));
    sections.push(`## User requests\n${requestList(requests, MAX_REQUESTS)}`);
    sections.push(
      `## Files\nRead: ${request.readFiles.join(", ") || "(none)"}\nModified: ${request.modifiedFiles.join(", ") || "(none)"}`,
    );
    const state = lastAssistantText(messages);
    sections.push(`## Last state\n${state ? clip(state, STATE_CHARS) : "(no assistant reply)"}`);
    if (request.customInstructions)
      sections.push(`## Focus\n${clip(request.customInstructions, REQUEST_CHARS)}`);
    return { text: sections.join("\n\n") };
  }
}
