import type { ProjectedEntry } from "./context";
import { ownMessages, projectEntries } from "./context";
import type { TreeEntry } from "./entries";
import { estimateTokens } from "./tokens";

/*
 * Where to cut a branch for compaction (following pi 1.6's rules, see docs/pi.md): keep at least
 * `keepRecentTokens` of the newest messages, cut only where a turn may start (never at a tool
 * result or a system message, never between a tool call and its result).
 */

/** Roles a kept part may begin at (pi 1.6): never a tool result, nor a system message. */
const CUT_ROLES = new Set([
  "user",
  "assistant",
  "custom",
  "bashExecution",
  "branchSummary",
  "compactionSummary",
]);
/** Roles that open a turn (pi 1.6): a cut there splits no turn. */
const TURN_START_ROLES = new Set(["user", "custom", "bashExecution", "branchSummary", "compactionSummary"]);

/** Whether an entry other than a compaction shows a message of one of `roles`. */
function showsRole(projected: ProjectedEntry, roles: ReadonlySet<string>): boolean {
  return projected.entry.type !== "compaction" && projected.messages.some((m) => roles.has(m.role));
}

function tokensOf(projected: ProjectedEntry): number {
  return projected.messages.reduce((tokens, message) => tokens + estimateTokens(message), 0);
}

/**
 * Positions in [start, end) where a kept part may begin: an entry with a message a turn may start
 * at, and not inside the span from a tool call to its result (cutting there would keep a result
 * without its call; pi 1.6 only refuses to cut at the result itself).
 */
function cutPoints(entries: readonly ProjectedEntry[], start: number, end: number): number[] {
  const callAt = new Map<string, number>();
  const blocked = new Uint8Array(end - start);
  for (let i = start; i < end; i++) {
    for (const message of (entries[i] as ProjectedEntry).messages) {
      if (message.role === "assistant" && Array.isArray((message as { content?: unknown }).content)) {
        for (const part of (message as { content: unknown[] }).content) {
          const call = part as { type?: unknown; id?: unknown };
          if (call?.type === "toolCall" && typeof call.id === "string") callAt.set(call.id, i);
        }
      } else if (message.role === "toolResult") {
        const call = callAt.get((message as { toolCallId: string }).toolCallId);
        if (call !== undefined) for (let j = call + 1; j <= i; j++) blocked[j - start] = 1;
      }
    }
  }
  const points: number[] = [];
  for (let i = start; i < end; i++) {
    if (!blocked[i - start] && showsRole(entries[i] as ProjectedEntry, CUT_ROLES)) points.push(i);
  }
  return points;
}

/**
 * Whether the entries after a cut are only a failed attempt that edits left out: an assistant
 * reply omitted by an edit, and nothing else the context shows (pi 1.6's recovery rule: such a
 * suffix is not worth keeping, so the cut moves past its first entry).
 */
function isOmittedAttempt(suffix: readonly ProjectedEntry[]): boolean {
  const visible = (p: ProjectedEntry) =>
    p.entry.type !== "context_edit" &&
    projectEntries([p.entry], undefined, { edits: new Map(), checkpointId: null }).length > 0;
  const omitted = (p: ProjectedEntry) => visible(p) && p.messages.length === 0;
  const omittedIds = new Set(suffix.filter(omitted).map((p) => p.entry.id));
  const replacesOther = suffix.some(
    (p) =>
      p.entry.type === "context_edit" && p.entry.replacement !== null && !omittedIds.has(p.entry.targetId),
  );
  return (
    !replacesOther &&
    suffix.some((p) => p.entry.type === "message" && p.entry.message.role === "assistant" && omitted(p)) &&
    suffix.every((p) => p.entry.type !== "compaction" && (!visible(p) || omitted(p)))
  );
}

export interface Cut {
  /** Index of the first entry kept. */
  index: number;
  /** When the cut falls inside a turn: the index of the entry that opened it, else -1. */
  turnStart: number;
}

/**
 * Where the kept part of projected entries begins (pi 1.6's rules, with the tool-call span kept
 * whole): walk back from `end` summing message tokens until `keep` is reached, move to the nearest
 * cut point at or after that entry (past the last one: the last one), step back over entries the
 * context does not show, and report the opening of the turn the cut splits.
 */
export function findProjectedCut(
  entries: readonly ProjectedEntry[],
  start: number,
  end: number,
  keep: number,
  options: { skipOmittedAttempt?: boolean } = {},
): Cut {
  const points = cutPoints(entries, start, end);
  if (points.length === 0) return { index: start, turnStart: -1 };
  let cut = points[0] as number;
  let exceeded = false;
  let tokens = 0;
  for (let i = end - 1; i >= start; i--) {
    const size = tokensOf(entries[i] as ProjectedEntry);
    if (size === 0) continue;
    tokens += size;
    if (tokens < keep) continue;
    exceeded = true;
    // A turn longer than the budget is kept whole rather than not compacted at all.
    cut = points.find((p) => p >= i) ?? (points[points.length - 1] as number);
    break;
  }
  if (options.skipOmittedAttempt && exceeded && isOmittedAttempt(entries.slice(cut + 1, end))) cut++;
  // Entries the context does not show, just before the cut, stay with what they precede.
  while (cut > start) {
    const previous = entries[cut - 1] as ProjectedEntry;
    if (previous.entry.type === "compaction" || previous.messages.length > 0) break;
    cut--;
  }
  const cutEntry = entries[cut];
  if (!cutEntry || showsRole(cutEntry, TURN_START_ROLES)) return { index: cut, turnStart: -1 };
  for (let i = cut; i >= start; i--)
    if (showsRole(entries[i] as ProjectedEntry, TURN_START_ROLES)) return { index: cut, turnStart: i };
  return { index: cut, turnStart: -1 };
}

/**
 * pi's `findCutPoint` over raw path entries (each showing its own messages, no edits): the index
 * where the kept part begins, holding at least `keep` tokens when the branch has them.
 */
export function findCut(path: readonly TreeEntry[], start: number, end: number, keep: number): number {
  // A compaction shows its own opening here (its system message and summary count), as in pi.
  const own = ownMessages(path, (entry) => (entry.type === "compaction" ? entry.id : undefined));
  const entries = path.map((entry, index) => ({ entry, messages: own[index] ?? [] }));
  return findProjectedCut(entries, start, end, keep).index;
}
