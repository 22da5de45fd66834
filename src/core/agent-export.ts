import { latestCompaction, ownMessages, projectContext } from "./context";
import type { SessionEntry, TreeEntry } from "./entries";
import type { AgentMessage } from "./messages";
import type { SourceFields } from "./source-lines";

/*
 * What the exports to coding agents' files share: lines written in the order the file had them,
 * which entries the file's lines hold, the conversation of a branch written where no line holds
 * it, and the two merged in the session's order.
 */

export type Line = Record<string, unknown>;

/** A line out (ending in a newline), and where the entry it is written for stands in the session. */
export interface PlacedLine {
  at: number;
  text: string;
}

/**
 * The file's own lines and the lines written for what no line holds, as one file in the session's
 * order: a written line goes out before the first own line of an entry stored after its own (a
 * line the agent added under one the service wrote follows it).
 */
export async function* inSessionOrder(
  own: AsyncIterable<PlacedLine>,
  written: AsyncIterable<PlacedLine>,
): AsyncGenerator<string> {
  const more = written[Symbol.asyncIterator]();
  let next = await more.next();
  for await (const line of own) {
    for (; !next.done && next.value.at < line.at; next = await more.next()) yield next.value.text;
    yield line.text;
  }
  for (; !next.done; next = await more.next()) yield next.value.text;
}

/** The line a custom entry holds (`data`) and the place in the file it recorded, if any. */
export function customLine(entry: SessionEntry, prefix: string): { line: Line; number?: number } | undefined {
  if (entry.type !== "custom" || !entry.customType.startsWith(prefix)) return undefined;
  const data = entry.data;
  if (data === null || typeof data !== "object" || Array.isArray(data)) return undefined;
  const numbers = (entry as SourceFields).sourceLineNumbers;
  const number = Array.isArray(numbers) && Number.isInteger(numbers[0]) ? (numbers[0] as number) : undefined;
  return number === undefined ? { line: data as Line } : { line: data as Line, number };
}

/**
 * Lines out in the file's order: numbered lines by number, the others where they come. `out` is
 * what each line is written as, seen in that order; `at`, where its entry stands in the session.
 */
export class LineOrder {
  #pending: Array<{ number: number; line: Line; at: number }> = [];
  readonly #out: (line: Line) => Line;

  constructor(out: (line: Line) => Line = (line) => line) {
    this.#out = out;
  }

  /** A line now; lines held back for numbers before its own go out first. */
  *put(line: Line, at: number, number?: number): Generator<PlacedLine> {
    yield* this.#upTo(number);
    yield { at, text: `${JSON.stringify(this.#out(line))}\n` };
  }

  /** A line whose number is still to come. */
  later(line: Line, at: number, number: number): void {
    const index = this.#pending.findIndex((p) => p.number > number);
    this.#pending.splice(index < 0 ? this.#pending.length : index, 0, { number, line, at });
  }

  *#upTo(number: number | undefined): Generator<PlacedLine> {
    while (this.#pending.length > 0 && (number === undefined || (this.#pending[0]?.number ?? 0) < number)) {
      const { line, at } = this.#pending.shift() as { line: Line; at: number };
      yield { at, text: `${JSON.stringify(this.#out(line))}\n` };
    }
  }

  *rest(): Generator<PlacedLine> {
    yield* this.#upTo(undefined);
  }
}

/**
 * Which entries a file's lines hold: those made from a line (`owners`), and those made as part of
 * one, named after it (`<owner>:<n>`). Also where each entry hangs, to walk the current branch.
 */
export class HeldEntries {
  readonly #parentOf = new Map<string, string | null>();
  readonly #at = new Map<string, number>();
  readonly #owners = new Set<string>();
  readonly #held = new Set<string>();
  readonly #others: string[] = [];
  readonly #renames: string[] = [];
  /** Whether any entry holds a line of the file. */
  hasLines = false;
  /** Whether the session was named here (a `session_info` no line holds). */
  namedHere = false;

  /** `owner`: the names entries made as part of this entry's lines start with. */
  read(entry: SessionEntry, owner: readonly string[] | undefined): void {
    if (entry.type === "leaf") return;
    this.#parentOf.set(entry.id, entry.parentId);
    this.#at.set(entry.id, this.#at.size);
    if (entry.type === "session_info") this.#renames.push(entry.id);
    if (owner === undefined) {
      this.#others.push(entry.id);
      return;
    }
    this.hasLines = true;
    this.#held.add(entry.id);
    for (const name of owner) this.#owners.add(name);
  }

  /** Settles the entries made as part of a line: call after the last `read`. */
  finish(): string[] {
    const partOf: string[] = [];
    for (const id of this.#others) {
      const owner = this.#owners.has(id) ? id : this.ownerOf(id);
      if (owner === undefined) continue;
      this.#held.add(id);
      partOf.push(id);
    }
    this.namedHere = this.#renames.some((id) => !this.#held.has(id));
    return partOf;
  }

  /** The owner name `id` starts with (`<owner>:…`), if any. */
  ownerOf(id: string): string | undefined {
    for (let at = id.indexOf(":"); at > 0; at = id.indexOf(":", at + 1)) {
      const prefix = id.slice(0, at);
      if (this.#owners.has(prefix)) return prefix;
    }
    return undefined;
  }

  /** Whether entry `id` is the last one read. */
  isLatest(id: string): boolean {
    return this.#at.get(id) === this.#at.size - 1;
  }

  held(id: string): boolean {
    return this.#held.has(id);
  }

  /** The entries no line holds that an entry a line holds hangs from, in the session's order. */
  unheldParents(): string[] {
    const parents = new Set<string>();
    for (const id of this.#held) {
      const parent = this.#parentOf.get(id) ?? null;
      if (parent !== null && !this.#held.has(parent)) parents.add(parent);
    }
    return [...parents].sort((a, b) => this.at(a) - this.at(b));
  }

  /** Where entry `id` stands in the session's order (after every entry read, for one read later). */
  at(id: string): number {
    return this.#at.get(id) ?? Number.POSITIVE_INFINITY;
  }

  parentOf(id: string): string | null {
    return this.#parentOf.get(id) ?? null;
  }

  /** The entry ids root → `leafId`. */
  path(leafId: string | null): string[] {
    const ids: string[] = [];
    for (let at = leafId; at !== null && this.#parentOf.has(at); at = this.#parentOf.get(at) ?? null)
      ids.push(at);
    return ids.reverse();
  }
}

/** An entry of a branch's conversation, with the messages it stands for. */
export interface Written {
  entry: TreeEntry;
  messages: AgentMessage[];
  /** A message the latest compaction kept, written again after its summary. */
  kept: boolean;
}

/**
 * The conversation on a branch: what came before the latest compaction (for the record), then the
 * context as built (the compaction, what it kept, what followed).
 */
export function conversation(path: readonly TreeEntry[]): Written[] {
  const compaction = latestCompaction(path);
  const at = compaction ? path.indexOf(compaction) : 0;
  const earlier = path.slice(0, at);
  const own = ownMessages(earlier);
  const before = earlier.map((entry, index) => ({ entry, messages: own[index] ?? [], kept: false }));
  const keptIds = new Set(before.map((w) => w.entry.id));
  const context = projectContext(path).map(({ entry, messages }) => ({
    entry,
    messages,
    kept: keptIds.has(entry.id),
  }));
  return [...before, ...context];
}

/** A message's time as a line's `timestamp`: its own when it is a date, else its entry's. */
export function lineTime(message: AgentMessage, entry: TreeEntry): string {
  const time = (message as { timestamp?: unknown }).timestamp;
  const date = typeof time === "number" ? new Date(time) : undefined;
  return date && !Number.isNaN(date.getTime()) ? date.toISOString() : entry.timestamp;
}
