import type { AnswerSource } from "../../core/generations/answer-fold";
import { answerFold, givenAnswer } from "../../core/generations/answer-fold";
import type { GenerationFormat, StoppedBy } from "../../core/generations/generation-schemas";
import type { Shortfall } from "../../core/generations/short-answer";
import { shortAnswer } from "../../core/generations/short-answer";
import { newId } from "../../core/ids";
import type { AgentMessage } from "../../core/messages";
import type { AppendEntryInput } from "../../core/providers/entry-input";
import { READ_PAGE_BYTES } from "../stream/protocol";
import type { StreamState, StreamStore } from "../stream/store";
import type { GenerationRow } from "./generation-rows";

/*
 * A generation's answer as entries: the message a complete gave, or what its chunks make (read
 * from its stream a page at a time and folded by its format), each message an entry under the one
 * before, the first under the generation's parent; or, when it could not be stored whole, the one
 * message its ending keeps (short-answer.ts).
 */

/** How a generation ends: completed (with the message, or assembled), or stopped. */
export type GenerationEnd = { kind: "complete"; message?: unknown } | { kind: "stop"; by: StoppedBy };

/** What the entries of an answer are called: the generation's id and `<id>:1`, …, or ids of their own. */
export type AnswerIds = "generation" | "own";

/** How an answer is written: under which ids, and, when it could not be stored whole, what is kept. */
export interface AnswerWriting {
  ids: AnswerIds;
  shortfall?: Shortfall;
}

/**
 * The entries ending generation `row` the way `how` says, stamped `now`; with a `shortfall`, the
 * one entry its ending keeps of an answer that could not be stored whole.
 */
export function answerEntries(
  store: StreamStore,
  row: GenerationRow,
  stream: StreamState,
  how: GenerationEnd,
  now: number,
  writing: AnswerWriting = { ids: "generation" },
): AppendEntryInput[] {
  const source: AnswerSource = {
    provider: row.model?.provider ?? "unknown",
    model: row.model?.modelId ?? "unknown",
    api: row.api ?? "unknown",
  };
  const messages =
    how.kind === "complete" && how.message !== undefined
      ? givenAnswer(row.format, how.message, source, now)
      : assemble(store, row, stream, source, how.kind === "stop", now);
  const { ids, shortfall } = writing;
  return chained(row, shortfall ? [shortAnswer(messages, shortfall, source, now)] : messages, ids);
}

/** A generation's chunks as its stream holds them, read a page at a time: text, or events. */
export function* storedChunks(store: StreamStore, format: GenerationFormat, stream: StreamState) {
  const decoder = new TextDecoder();
  for (let from = 0; from < stream.tail.records; ) {
    const page = store.page(stream, from, stream.tail.records, READ_PAGE_BYTES);
    if (!page) break;
    for (const piece of page.pieces) {
      if (format === "text") yield decoder.decode(piece, { stream: true });
      else yield* JSON.parse(`[${decoder.decode(piece)}]`) as unknown[];
    }
    from = page.end.records;
  }
  if (format === "text") yield decoder.decode();
}

/** What a generation's chunks make. */
function assemble(
  store: StreamStore,
  row: GenerationRow,
  stream: StreamState,
  source: AnswerSource,
  stopped: boolean,
  timestamp: number,
): AgentMessage[] {
  const fold = answerFold(row.format, source);
  for (const chunk of storedChunks(store, row.format, stream)) fold.add(chunk);
  return fold.finish({ stopped, timestamp });
}

/**
 * Each message an entry under the one before, the first under the generation's parent: the first
 * takes the generation's id, the rest `<id>:1`, `<id>:2`, …; or each an id of its own.
 */
function chained(row: GenerationRow, messages: AgentMessage[], ids: AnswerIds): AppendEntryInput[] {
  let parentId = row.parentId;
  return messages.map((message, index) => {
    const id = ids === "own" ? newId() : index === 0 ? row.id : `${row.id}:${index}`;
    const entry: AppendEntryInput = { type: "message", id, parentId, message };
    parentId = id;
    return entry;
  });
}
