import type { AgentMessage, EntryInput, StoredEntry, TreeEntry } from "../../core";
import { isToolResultMessage } from "../../core";
import { sha256Hex } from "../../core/bytes";
import { canonicalJson } from "../../core/json";
import type { LangChainMessage } from "../../core/providers/from-langchain";
import { fromLangChain, readLangChainMessage } from "../../core/providers/from-langchain";
import { keepOriginal, originalOf } from "../conversation";
import { keyedId } from "../keys";
import type { Serialized } from "./serialized";

/*
 * A graph's messages channel (`MessagesAnnotation`, `messagesStateReducer`: LangChain messages,
 * each with an id) as the thread's conversation. The messages a checkpoint adds become message
 * entries on its path, just before it, each keeping the message as the serializer wrote it; a
 * message the checkpoint no longer holds (a `RemoveMessage`) is a context edit leaving it out, and
 * one it holds changed (the same id, other content) a context edit replacing its content, keeping
 * the new message. The checkpoint then holds only how it changed the channel, as references to
 * those entries, so the context at each checkpoint is that checkpoint's messages, and each
 * message is stored once.
 *
 * A list the references cannot follow (a message without an id, an id twice, a message put
 * before others it did not come before) is written again whole, the parent's messages left out
 * by context edits; a list of anything but LangChain messages is stored as any channel's value.
 */

export const MESSAGES_CHANNEL = "messages";
export const FRAMEWORK = "langgraph";

/** Where a checkpoint's message is: the entry it became, and the entry holding it as it is now. */
export interface MessageRef {
  /** The message's own id. */
  id: string;
  /** The message entry it became (what a context edit names). */
  entry: string;
  /** The entry whose kept message is the message now: `entry`, or the last edit that replaced it. */
  holder: string;
  /** A digest of the message as serialized, to tell a replaced message from the same one. */
  print: string;
  /** Whether its entry is a message a context edit may name (not a message with no place in a context). */
  editable: boolean;
}

type EditInput = Extract<EntryInput, { type: "context_edit" }>;

/** How a checkpoint changed its messages channel (CheckpointData's `messages`). */
export interface MessageChanges {
  /** Ids of the messages it no longer holds. */
  removed: string[];
  /** Messages it added (after all others) or replaced (in place). */
  added: MessageRef[];
}

/** The references after `changes`. */
export function applyChanges(refs: readonly MessageRef[], changes: MessageChanges): MessageRef[] {
  const removed = new Set(changes.removed);
  const next = refs.filter((ref) => !removed.has(ref.id));
  const at = new Map(next.map((ref, index) => [ref.id, index]));
  for (const ref of changes.added) {
    const index = at.get(ref.id);
    if (index === undefined) {
      at.set(ref.id, next.length);
      next.push(ref);
    } else next[index] = ref;
  }
  return next;
}

/** The changes that take `before` to `after`. */
export function changesBetween(before: readonly MessageRef[], after: readonly MessageRef[]): MessageChanges {
  const now = new Set(after.map((ref) => ref.id));
  const was = new Map(before.map((ref) => [ref.id, ref]));
  return {
    removed: before.filter((ref) => !now.has(ref.id)).map((ref) => ref.id),
    added: after.filter((ref) => was.get(ref.id)?.holder !== ref.holder),
  };
}

/** A message of a messages channel, as serialized, and the digest that tells it from another. */
export interface ListedMessage {
  value: Serialized;
  print: string;
}

/** A message as `put` lists it: `serialized`, with its digest. */
export async function listedMessage(value: Serialized): Promise<ListedMessage> {
  return { value, print: await sha256Hex(canonicalJson(value)) };
}

/** What `put` writes for a checkpoint's messages: entries before it, and its references. */
export interface MessagesPlan {
  entries: EntryInput[];
  refs: MessageRef[];
}

/**
 * The entries and references of a checkpoint's messages (`serialized`, in the channel's order),
 * given its parent's references; undefined when references cannot follow the list. A tool's
 * result is stored under the id of the call it answers (`storedCallId`: the graph may have been
 * shown a stored call by another id, one every model API takes).
 */
export async function planMessages(
  listed: readonly ListedMessage[],
  parentRefs: readonly MessageRef[],
  checkpointId: string,
  storedCallId: (wireId: string) => string,
): Promise<MessagesPlan | undefined> {
  const messages: LangChainMessage[] = [];
  for (const { value } of listed) {
    const message = "json" in value ? readLangChainMessage(value.json) : undefined;
    if (!message) return undefined;
    messages.push(message);
  }
  // Messages the references can follow: each with an id of its own, the parent's that stay in
  // their order, new ones after them. Otherwise the parent's messages are all left out and the
  // list is written again whole (its messages without ids named by their place).
  const ids = messages.map((m) => m.id);
  let before = new Map(parentRefs.map((ref) => [ref.id, ref]));
  const kept = ids.filter((id) => before.has(id));
  const follows =
    !ids.includes("") &&
    new Set(ids).size === ids.length &&
    kept.join("\n") ===
      parentRefs
        .filter((ref) => ids.includes(ref.id))
        .map((ref) => ref.id)
        .join("\n") &&
    ids.slice(0, kept.length).every((id) => before.has(id));
  if (!follows) {
    before = new Map();
    messages.forEach((m, index) => {
      m.id = `${checkpointId}:${index}`;
    });
  }
  const now = new Set(messages.map((m) => m.id));

  const entries: EntryInput[] = [];
  const history: AgentMessage[] = [];
  const refs: MessageRef[] = [];
  const idOf = (n: number) => keyedId("", [checkpointId, `message-${n}`]);
  for (const ref of parentRefs) {
    if (now.has(ref.id)) continue;
    // Removed: left out of the context from here on.
    if (!ref.editable) return undefined;
    entries.push({
      type: "context_edit",
      id: await idOf(entries.length),
      targetId: ref.entry,
      replacement: null,
    });
  }
  // Only new and replaced messages are read; a tool's result finds its call's name in the turn
  // it came in, which starts at the user's last message before them.
  const changed = messages.findIndex((m, i) => before.get(m.id)?.print !== listed[i]?.print);
  let turn = changed;
  while (turn > 0 && messages[turn]?.kind !== "human") turn--;
  for (const [index, message] of messages.entries()) {
    const { value, print } = listed[index] as ListedMessage;
    const ref = before.get(message.id);
    if (changed === -1 || index < turn) {
      refs.push(ref as MessageRef);
      continue;
    }
    const core = fromLangChain(message, { history, timestamp: Date.now() });
    if (core) history.push(core);
    if (ref && ref.print === print) {
      refs.push(ref);
      continue;
    }
    const id = await idOf(entries.length);
    if (ref) {
      // The same message, replaced: its content in the context is the new one's.
      if (!ref.editable || !core) return undefined;
      const content = (core as { content: unknown }).content as NonNullable<
        EditInput["replacement"]
      >["content"];
      const edit: EditInput = { type: "context_edit", id, targetId: ref.entry, replacement: { content } };
      entries.push(...keepOriginal([edit], FRAMEWORK, [value]));
      refs.push({ ...ref, holder: id, print });
    } else {
      const stored =
        core && isToolResultMessage(core) ? { ...core, toolCallId: storedCallId(core.toolCallId) } : core;
      const entry: EntryInput = stored
        ? { type: "message", id, message: stored }
        : { type: "custom", id, customType: `${FRAMEWORK}:message`, data: { kind: message.kind } };
      entries.push(...keepOriginal([entry], FRAMEWORK, [value]));
      refs.push({ id: message.id, entry: id, holder: id, print, editable: core !== undefined });
    }
  }
  return { entries, refs };
}

/** The message an entry keeps (a message entry, or an edit that replaced one). */
export function keptMessage(entry: StoredEntry | undefined): Serialized | undefined {
  const original = entry && originalOf(entry as TreeEntry, FRAMEWORK);
  return original?.records[0] as Serialized | undefined;
}
