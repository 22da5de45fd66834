import type { AgentMessage } from "./messages";

/*
 * The files a summarized part of a conversation touched, as its tool calls named them (`read`
 * apart from `edit` and `write`), carried from summary to summary in their details and listed
 * under each summary's text as pi lists them.
 */

export interface FileLists {
  readFiles: string[];
  modifiedFiles: string[];
}

/** Adds the files a message's tool calls name to `read` and `modified`. */
export function addFiles(message: AgentMessage, read: Set<string>, modified: Set<string>): void {
  const add = (name: unknown, args: unknown) => {
    const path = (args as { path?: unknown } | undefined)?.path;
    if (typeof path !== "string" || !path) return;
    if (name === "read") read.add(path);
    else if (name === "edit" || name === "write") modified.add(path);
  };
  if (message.role === "toolResult") {
    // Calls a tool made itself (a codemode script's) are recorded on its result (pi 1.6).
    const nested = (message as { nestedCalls?: { calls?: unknown } }).nestedCalls?.calls;
    for (const call of Array.isArray(nested) ? nested : []) add(call?.name, call?.arguments);
    return;
  }
  if (message.role !== "assistant" || !Array.isArray((message as { content?: unknown }).content)) return;
  for (const part of (message as { content: unknown[] }).content) {
    const call = part as { type?: unknown; name?: unknown; arguments?: unknown };
    if (call?.type === "toolCall") add(call.name, call.arguments);
  }
}

/** Files read and modified by tool calls in `messages`, on top of what earlier summaries recorded. */
export function fileLists(
  messages: readonly AgentMessage[],
  earlier: ReadonlyArray<FileLists | undefined> = [],
): FileLists {
  const read = new Set<string>();
  const modified = new Set<string>();
  for (const lists of earlier) {
    for (const file of lists?.readFiles ?? []) read.add(file);
    for (const file of lists?.modifiedFiles ?? []) modified.add(file);
  }
  for (const message of messages) addFiles(message, read, modified);
  return { readFiles: [...read].filter((f) => !modified.has(f)).sort(), modifiedFiles: [...modified].sort() };
}

/** The file lists an earlier summary's details recorded, if any. */
export function detailsFiles(details: unknown): FileLists | undefined {
  if (!details || typeof details !== "object") return undefined;
  const { readFiles, modifiedFiles } = details as { readFiles?: unknown; modifiedFiles?: unknown };
  const strings = (v: unknown) =>
    Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
  return { readFiles: strings(readFiles), modifiedFiles: strings(modifiedFiles) };
}

/** pi's way of listing files under a summary, so a model sees what the work touched. */
export function formatFileLists({ readFiles, modifiedFiles }: FileLists): string {
  const sections: string[] = [];
  if (readFiles.length > 0) sections.push(`<read-files>\n${readFiles.join("\n")}\n</read-files>`);
  if (modifiedFiles.length > 0)
    sections.push(`<modified-files>\n${modifiedFiles.join("\n")}\n</modified-files>`);
  return sections.length === 0 ? "" : `\n\n${sections.join("\n\n")}`;
}
