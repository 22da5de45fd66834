import type { ModelRef } from "../context";
import { buildSessionContext, modelSetBy } from "../context";
import type { EntryInput, StoredEntry, TreeEntry } from "../entries";
import { SessionError } from "../errors";
import { isValidId, newId } from "../ids";
import { assertJsonDepth } from "../json";
import type { AgentMessage } from "../messages";
import { convertProviderMessage } from "./convert";
import type { ProviderMessageEntryInput } from "./entry-input";
import { parseModelRef } from "./target";

/*
 * An append of a provider's message becomes message entries: converted against the conversation
 * it continues (tool results take their tool's name from the calls waiting there), recorded as
 * the session's model unless the entry names one, and stored as one chain, so a resend with the
 * same id is a replay of the whole chain.
 */

/** What a provider's message is read against: the conversation at the entry it is appended under. */
export interface Conversation {
  /**
   * The context's messages, at least its last turn (see `LastTurnStart`): readers look no further
   * back.
   */
  messages: readonly AgentMessage[];
  /** The context's model (its last model change or reply). */
  model: ModelRef | null;
}

export const NO_CONVERSATION: Conversation = { messages: [], model: null };

/** The conversation at the end of a context path (the whole path is always a correct one). */
export function conversationOf(path: readonly TreeEntry[]): Conversation {
  const { messages, model } = buildSessionContext(path);
  return { messages, model };
}

/** A message entry an append of a provider's message stands for. */
export type ConvertedEntry = Extract<EntryInput, { type: "message" }> & { id: string };

export function isProviderEntry(input: unknown): input is ProviderMessageEntryInput {
  if (input === null || typeof input !== "object") return false;
  const entry = input as { type?: unknown; format?: unknown };
  return entry.type === "message" && entry.format !== undefined;
}

/**
 * The message entries for `input`, appended on `conversation`: the first under the entry's id,
 * the ones after it under `<id>:1`, `<id>:2`, … and chained in order. `earlier` is the entry
 * already stored under that id (a resend): converting it again with its message's timestamp,
 * on the conversation at its parent, gives the same messages, so the append is a replay.
 */
export function providerMessageEntries(
  input: ProviderMessageEntryInput,
  conversation: Conversation,
  earlier?: StoredEntry,
): ConvertedEntry[] {
  const model = input.model === undefined ? conversation.model : parseModelRef(input.model);
  const timestamp =
    input.timestamp !== undefined
      ? Date.parse(input.timestamp)
      : earlier?.type === "message"
        ? earlier.message.timestamp
        : undefined;
  const messages = convertProviderMessage(input.format, input.message, {
    history: conversation.messages,
    ...(model ? { model } : {}),
    ...(typeof timestamp === "number" ? { timestamp } : {}),
  });
  if (messages.length === 0) {
    throw new SessionError("invalid_request", `invalid ${input.format} message: message: holds no message`, [
      { path: ["message"], code: "custom", message: "holds no message" },
    ]);
  }
  const id = input.id ?? newId();
  return messages.map((message, index) => {
    const entryId = index === 0 ? id : `${id}:${index}`;
    if (!isValidId(entryId)) {
      throw new SessionError(
        "invalid_request",
        `id ${id} leaves no room for the id ${entryId} of the message after it`,
        [{ path: ["id"], code: "custom", message: "too long to derive the ids of the messages after it" }],
      );
    }
    const entry: ConvertedEntry = { type: "message", id: entryId, message };
    if (index === 0 && input.parentId !== undefined) entry.parentId = input.parentId;
    if (input.timestamp !== undefined) entry.timestamp = input.timestamp;
    // JSON the message carried as text (a tool call's arguments) is held to the body's rules once
    // parsed, so that everything stored can be exported and imported again.
    assertJsonDepth(entry, "the converted message");
    return entry;
  });
}

/** What a store tells `expandProviderEntries` about itself. */
export interface ProviderAppendView {
  readonly leafId: string | null;
  /** The stored entry with this id, if there is one. */
  load(id: string): StoredEntry | undefined;
  /** The conversation at an entry; an id naming no entry gives none (the append rules refuse it). */
  conversationAt(entryId: string): Conversation;
}

/** The conversation after `entries`: their messages added, the model the last of them sets (see `modelSetBy`). */
function extend(conversation: Conversation, entries: readonly object[]): Conversation {
  let { model } = conversation;
  const messages = [...conversation.messages];
  for (const entry of entries as TreeEntry[]) {
    if (entry.type === "message") messages.push(entry.message);
    model = modelSetBy(entry) ?? model;
  }
  return { messages, model };
}

function once<T>(make: () => T): () => T {
  let value: { v: T } | undefined;
  return () => {
    value ??= { v: make() };
    return value.v;
  };
}

/** A conversion failure inside a batch, naming the entry. */
function inBatch(error: unknown, index: number): unknown {
  if (!(error instanceof SessionError) || error.code !== "invalid_request") return error;
  const details = Array.isArray(error.details)
    ? error.details.map((issue: { path?: unknown[] }) => ({ ...issue, path: [index, ...(issue.path ?? [])] }))
    : error.details;
  return new SessionError(error.code, `entry ${index}: ${error.message}`, details);
}

/**
 * A batch with each provider message replaced by its message entries. Each is read against the
 * conversation at its parent: stored, or made by the batch's earlier entries (a reply and then
 * its tool results in one batch). A resend is read at the parent it was stored under. A batch
 * without provider messages comes back as it is.
 */
export function expandProviderEntries(inputs: readonly unknown[], view: ProviderAppendView): unknown[] {
  if (!inputs.some(isProviderEntry)) return inputs as unknown[];
  const stored = (id: string | null): (() => Conversation) =>
    id === null ? () => NO_CONVERSATION : once(() => view.conversationAt(id));
  // The conversation after each named entry of the batch, and after the previous one.
  const after = new Map<string, () => Conversation>();
  const at = (id: string | null) => (id !== null && after.get(id)) || stored(id);
  let previous = stored(view.leafId);
  const out: unknown[] = [];
  inputs.forEach((input, index) => {
    if (!isProviderEntry(input)) {
      const entry = input as Record<string, unknown>;
      const id = typeof entry.id === "string" ? entry.id : undefined;
      const parent =
        typeof entry.parentId === "string" || entry.parentId === null ? at(entry.parentId) : previous;
      // An entry stored already (a replay) continues the conversation where it is stored.
      previous = once(() =>
        id !== undefined && view.load(id) ? view.conversationAt(id) : extend(parent(), [entry]),
      );
      if (id !== undefined) after.set(id, previous);
      out.push(input);
      return;
    }
    const earlier = input.id === undefined ? undefined : view.load(input.id);
    const parent = earlier
      ? stored(earlier.parentId)
      : input.parentId !== undefined
        ? at(input.parentId)
        : previous;
    let entries: ConvertedEntry[];
    try {
      entries = providerMessageEntries(input, parent(), earlier);
    } catch (error) {
      throw inputs.length > 1 ? inBatch(error, index) : error;
    }
    entries.forEach((entry, k) => {
      previous = once(() => extend(parent(), entries.slice(0, k + 1)));
      after.set(entry.id, previous);
    });
    out.push(...entries);
  });
  return out;
}
