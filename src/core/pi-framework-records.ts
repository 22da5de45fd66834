import { fingerprint } from "./context-answer";
import type { CustomEntry, CustomMessageEntry, TreeEntry } from "./entries";
import { frameworkMessages, langGraphMessagesHeld } from "./framework-custom-messages";
import type { AgentMessage } from "./messages";
import type { Session } from "./session";

/*
 * What a pi file holds for the records cf-sessions 0.1's framework adapters wrote (an OpenAI Agents
 * SDK item or an AI SDK UI message as a custom message, a LangGraph checkpoint holding its messages
 * channel as a value): pi reads a custom message as itself and a custom entry as no message, so
 * each record goes out as the conversation it stands for, in pi's message entries, which pi opens
 * to the context we build.
 *
 * A custom message becomes the messages it reads as, the last under the record's id (so what hangs
 * from the record hangs from it), the others under ids made from it. A checkpoint holding the
 * messages (or a later one on such a checkpoint's path) is written as stored after the messages its
 * context has beyond its parent's; when its context does not go on from its parent's (a message
 * removed, another door's message the checkpoint's list leaves out), after a compaction that keeps
 * nothing before it, then its whole context: pi has no other way to start a context afresh, so
 * there pi's context leads with that compaction's summary. A message a checkpoint holds reads with
 * the checkpoint's time; the file has it from the first checkpoint that holds it.
 */

type PiEntry = Record<string, unknown>;

/** What a pi compaction standing for a checkpoint's fresh start says. */
export const CHECKPOINT_START_SUMMARY = "The conversation continues as a LangGraph checkpoint holds it.";

/** The longest id (`ID_PATTERN`). */
const MAX_ID_CHARS = 128;

/** The id of an entry a record's entry becomes, made from the record's: the same in every export. */
function madeId(id: string, part: string): string {
  const made = `${id}:${part}`;
  if (made.length <= MAX_ID_CHARS) return made;
  // Too long for an id: the record's id cut short, with a hash of all of it to keep it unique.
  return `${id.slice(0, MAX_ID_CHARS - part.length - 10)}${fingerprint(id)}:${part}`;
}

/** Entries chained under `parentId` in order, each under the one before it. */
function chained(parentId: string | null, entries: readonly PiEntry[]): PiEntry[] {
  let parent = parentId;
  return entries.map((entry) => {
    const placed = { ...entry, parentId: parent };
    parent = entry.id as string;
    return placed;
  });
}

function messageEntry(id: string, timestamp: string, message: AgentMessage): PiEntry {
  return { type: "message", id, timestamp, message };
}

/** A message as the context shows it, its time aside. */
function withoutTime(message: AgentMessage): string {
  const { timestamp: _timestamp, ...rest } = message as AgentMessage & { timestamp?: unknown };
  return JSON.stringify(rest);
}

/** Whether `after` is `before` with messages added (times aside). */
function goesOn(before: readonly AgentMessage[], after: readonly AgentMessage[]): boolean {
  return (
    before.length <= after.length &&
    before.every((m, i) => withoutTime(m) === withoutTime(after[i] as AgentMessage))
  );
}

/** A custom message a framework wrote, as the messages it reads as (none: a custom entry, which pi shows no message for). */
function recordMessages(entry: CustomMessageEntry, messages: readonly AgentMessage[]): PiEntry[] {
  const { type: _type, parentId, content: _content, display: _display, details, ...rest } = entry;
  if (messages.length === 0) return [{ ...rest, type: "custom", parentId, data: details }];
  const last = messages.length - 1;
  return chained(
    parentId,
    messages.map((message, i) =>
      messageEntry(i === last ? entry.id : madeId(entry.id, String(i)), entry.timestamp, message),
    ),
  );
}

/** Reads a session's entries, in the session's order, as the entries a pi file holds for them. */
export class PiFrameworkRecords {
  readonly #session: Session;
  /** Entries with a LangGraph checkpoint holding its messages as a value on their path. */
  readonly #underCheckpoint = new Set<string>();

  constructor(session: Session) {
    this.#session = session;
  }

  /** The entries a pi file holds for `entry`: itself, unless it is a framework's record. */
  async entriesFor(entry: TreeEntry): Promise<PiEntry[]> {
    const held = langGraphMessagesHeld(entry);
    const under = held === "value" || (entry.parentId !== null && this.#underCheckpoint.has(entry.parentId));
    if (under) this.#underCheckpoint.add(entry.id);
    if (entry.type === "custom_message") {
      const messages = frameworkMessages(entry);
      if (messages) return recordMessages(entry, messages);
    }
    if (held !== undefined && under) return this.#checkpoint(entry as CustomEntry);
    return [entry];
  }

  async #checkpoint(entry: CustomEntry): Promise<PiEntry[]> {
    const before =
      entry.parentId === null ? [] : (await this.#session.buildContext({ leafId: entry.parentId })).messages;
    const after = (await this.#session.buildContext({ leafId: entry.id })).messages;
    const { parentId, ...checkpoint } = entry;
    const fresh = !goesOn(before, after);
    const start = madeId(entry.id, "start");
    const written: PiEntry[] = fresh
      ? [
          {
            type: "compaction",
            id: start,
            timestamp: entry.timestamp,
            summary: CHECKPOINT_START_SUMMARY,
            tokensBefore: 0,
            firstKeptEntryId: start,
          },
        ]
      : [];
    const added = fresh ? after : after.slice(before.length);
    for (const [i, message] of added.entries()) {
      written.push(messageEntry(madeId(entry.id, String(i)), entry.timestamp, message));
    }
    return chained(parentId, [...written, checkpoint]);
  }
}
