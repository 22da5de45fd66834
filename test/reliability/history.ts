/*
 * The history of a run (every operation sent, with what it got back) and the checker that reads
 * the service's state afterwards and holds it to the promise:
 *
 * - a write that got a success answer is there exactly once, as answered, and after every write
 *   acknowledged before it was sent;
 * - a write that got an error is not there; one that got no answer (or an answer saying it may
 *   have been applied) is there at most once, and a batch is there whole or not at all;
 * - of If-Match writers holding the same head, one wins;
 * - no read during the run showed part of a batch;
 * - every watcher got every seq once, in order;
 * - the tenant's listing is the sessions that exist.
 *
 * It runs anywhere (the Workers pool, Node): it only reads what the run recorded and the final
 * state it is given.
 */

/** What an operation came to: a success answer, an error (nothing applied), or no knowing. */
export type Outcome = "acked" | "failed" | "unknown";

interface OpBase {
  session: string;
  /** Milliseconds since the run began, when it was sent and when its answer (or failure) came. */
  start: number;
  end: number;
  outcome: Outcome;
  /** The final error's code, or `network` when no answer came. */
  error?: string;
  /** What each try came to, in order (for the report). */
  tries?: string;
}

export interface AppendOp extends OpBase {
  kind: "append";
  /** The entries' ids (the idempotency keys: every retry sends the same). */
  ids: string[];
  /** A word unique to each entry, in its text: found however the entry was stored. */
  marks: string[];
  /** The head an If-Match append expected; `group` ties the writers that raced for it. */
  expectedLeaf?: string | null;
  group?: number;
  /** Seqs the answer gave the entries. */
  seqs?: number[];
}

export interface LeafOp extends OpBase {
  kind: "leaf";
  target: string;
  seq?: number;
}

export interface CompactOp extends OpBase {
  kind: "compact";
  /** A word unique to the compaction, in its summary. */
  mark: string;
  seq?: number;
}

export interface ForkOp extends OpBase {
  kind: "fork";
  target: string;
  fork: string;
  /**
   * The source's path root → target, read once the fork was acknowledged: what the fork holds
   * whatever becomes of its source (which may be purged before the fork has copied it).
   */
  path?: string[];
}

/**
 * An answer written as a generation: opened, its chunks appended (each a word of `marks`, with
 * producer headers, so a retried chunk is written once), then completed into one entry.
 */
export interface GenerationOp extends OpBase {
  kind: "generation";
  /** The generation's id (its entry's), once it was opened. */
  generation?: string;
  marks: string[];
  /** The seq its completion answered for the entry. */
  seq?: number;
}

export interface LifeOp extends OpBase {
  kind: "create" | "delete" | "restore" | "purge";
}

export type Op = AppendOp | LeafOp | CompactOp | ForkOp | GenerationOp | LifeOp;

/** An operation as it is sent, before anything came back. */
export type PlannedOp = Op extends infer T
  ? T extends Op
    ? Omit<T, "start" | "end" | "outcome">
    : never
  : never;

/** Entry ids a read saw in a session during the run. */
export interface Snapshot {
  session: string;
  ids: string[];
}

/** What a watcher received: the seqs of its entry events, in order, and the entries' ids. */
export interface Watched {
  session: string;
  transport: "sse" | "websocket";
  seqs: number[];
  ids: string[];
}

export interface StoredEntryLike {
  id: string;
  seq: number;
  type: string;
  parentId: string | null;
  [key: string]: unknown;
}

/** The service's state once the run is over and every fault has stopped. */
export interface FinalState {
  /** Entries of every session that exists, in seq order; sessions that do not exist are absent. */
  sessions: Map<string, StoredEntryLike[]>;
  /** Every session id the run ever named, whether it exists now or not. */
  named: Set<string>;
  /** The tenant's listing. */
  listed: Set<string>;
  /** Path root → target in a session (to check forks against their source). */
  branch(session: string, target: string): Promise<string[]>;
}

export interface Verdict {
  ok: boolean;
  violations: string[];
  counts: Record<string, number>;
}

const MAX_REPORTED = 40;

/** Every string `mark` occurs as, over the JSON of a session's entries. */
function markCounts(entries: readonly StoredEntryLike[], marks: Iterable<string>): Map<string, number> {
  const wanted = new Set(marks);
  const counts = new Map<string, number>();
  for (const entry of entries) {
    for (const word of JSON.stringify(entry).match(/\bmk[0-9a-z]+x\b/g) ?? []) {
      if (wanted.has(word)) counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
  return counts;
}

/** A word that marks one write; `markCounts` finds it anywhere in an entry. */
export function mark(n: number, writer: number): string {
  return `mk${writer.toString(36)}z${n.toString(36)}x`;
}

/**
 * A generation's answer: one entry when it was completed, with every chunk once and in order; at
 * most one otherwise (the alarm stops a generation its writer left), holding the chunks it got as
 * a prefix of those sent, each once. No chunk is ever anywhere else.
 */
function checkGeneration(
  session: string,
  op: GenerationOp,
  byId: ReadonlyMap<string, StoredEntryLike[]>,
  marks: ReadonlyMap<string, number>,
  fail: (message: string) => void,
): void {
  const stored = op.generation === undefined ? [] : (byId.get(op.generation) ?? []);
  const name = `generation ${op.generation ?? `marked ${op.marks[0]}`}`;
  if (stored.length > 1) fail(`${session}: ${name} is stored ${stored.length} times`);
  const [entry] = stored;
  const text = entry ? JSON.stringify(entry) : "";
  const found = op.marks.filter((word) => text.includes(word));
  for (const word of op.marks) {
    if ((marks.get(word) ?? 0) > (found.includes(word) ? 1 : 0))
      fail(`${session}: a chunk of ${name} (${word}) is stored more than once or outside its answer`);
  }
  const positions = found.map((word) => text.indexOf(word));
  if (positions.some((at, i) => i > 0 && at < (positions[i - 1] as number)))
    fail(`${session}: the chunks of ${name} are out of order`);
  if (found.some((word, i) => word !== op.marks[i]))
    fail(`${session}: ${name} holds chunks that are not a prefix of those sent: ${found.join(" ")}`);
  if (op.outcome !== "acked") return;
  if (!entry) fail(`${session}: acknowledged ${name} has no entry`);
  else if (found.length !== op.marks.length)
    fail(`${session}: acknowledged ${name} holds ${found.length} of its ${op.marks.length} chunks`);
  else if (entry.seq !== op.seq)
    fail(`${session}: ${name} answered seq ${op.seq} but is stored at ${entry.seq}`);
}

export async function checkHistory(
  ops: readonly Op[],
  snapshots: readonly Snapshot[],
  watched: readonly Watched[],
  state: FinalState,
): Promise<Verdict> {
  const violations: string[] = [];
  const fail = (message: string) => {
    violations.push(message);
  };
  const counts: Record<string, number> = {};
  for (const op of ops) {
    const key = `${op.kind}:${op.outcome}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }

  const bySession = new Map<string, Op[]>();
  for (const op of ops) bySession.set(op.session, [...(bySession.get(op.session) ?? []), op]);

  for (const [session, sessionOps] of bySession) {
    const entries = state.sessions.get(session);
    if (!entries) continue;
    const byId = new Map<string, StoredEntryLike[]>();
    for (const entry of entries) byId.set(entry.id, [...(byId.get(entry.id) ?? []), entry]);
    const bySeq = new Map(entries.map((entry) => [entry.seq, entry]));
    const allMarks = sessionOps.flatMap((op) =>
      op.kind === "append" || op.kind === "generation" ? op.marks : op.kind === "compact" ? [op.mark] : [],
    );
    const marks = markCounts(entries, allMarks);
    const seqsOf = (op: Op): number[] =>
      op.kind === "append"
        ? (op.seqs ?? [])
        : op.kind === "leaf" || op.kind === "compact" || op.kind === "generation"
          ? [op.seq ?? -1]
          : [];

    for (const op of sessionOps) {
      if (op.kind === "append") {
        const present = op.ids.filter((id) => byId.has(id)).length;
        for (const id of op.ids) {
          if ((byId.get(id)?.length ?? 0) > 1) fail(`${session}: entry ${id} stored twice`);
        }
        for (const word of op.marks) {
          const n = marks.get(word) ?? 0;
          if (n > 1) fail(`${session}: the entry marked ${word} is there ${n} times`);
          if (op.outcome === "acked" && n !== 1) fail(`${session}: acknowledged ${word} is there ${n} times`);
          if (op.outcome === "failed" && n !== 0)
            fail(`${session}: ${word} failed (${op.error}; tries: ${op.tries}) yet is there`);
        }
        if (op.outcome === "acked") {
          if (present !== op.ids.length)
            fail(`${session}: acknowledged batch ${op.ids[0]} is missing entries`);
          op.ids.forEach((id, i) => {
            const stored = byId.get(id)?.[0];
            if (stored && op.seqs && stored.seq !== op.seqs[i]) {
              fail(`${session}: ${id} answered seq ${op.seqs[i]} but is stored at ${stored.seq}`);
            }
          });
          if (op.expectedLeaf !== undefined) {
            const first = byId.get(op.ids[0] as string)?.[0];
            if (first && first.parentId !== op.expectedLeaf) {
              fail(
                `${session}: If-Match append ${first.id} won on ${op.expectedLeaf} but hangs under ${first.parentId}`,
              );
            }
          }
        } else if (op.outcome === "failed" && present > 0) {
          fail(
            `${session}: batch ${op.ids[0]} failed (${op.error}; tries: ${op.tries}) yet ${present} of it is there`,
          );
        } else if (present !== 0 && present !== op.ids.length) {
          fail(`${session}: batch ${op.ids[0]} is there in part (${present} of ${op.ids.length})`);
        }
      } else if (op.kind === "compact") {
        const n = marks.get(op.mark) ?? 0;
        if (n > 1) fail(`${session}: compaction ${op.mark} is there ${n} times`);
        if (op.outcome === "acked" && n !== 1)
          fail(`${session}: acknowledged compaction ${op.mark} is there ${n} times`);
        if (op.outcome === "failed" && n !== 0)
          fail(`${session}: compaction ${op.mark} failed (${op.error}; tries: ${op.tries}) yet is there`);
        if (op.outcome === "acked" && bySeq.get(op.seq ?? -1)?.type !== "compaction") {
          fail(`${session}: acknowledged compaction ${op.mark} is not at its seq ${op.seq}`);
        }
      } else if (op.kind === "generation") {
        checkGeneration(session, op, byId, marks, fail);
      } else if (op.kind === "leaf" && op.outcome === "acked") {
        const record = bySeq.get(op.seq ?? -1);
        if (record?.type !== "leaf" || record.targetId !== op.target) {
          fail(`${session}: acknowledged leaf move to ${op.target} is not at its seq ${op.seq}`);
        }
      }
    }

    // Leaf records: every acknowledged move's, and at most one for each move that got no answer.
    const moves = sessionOps.filter((op): op is LeafOp => op.kind === "leaf");
    const records = entries.filter((entry) => entry.type === "leaf").length;
    const acked = moves.filter((op) => op.outcome === "acked").length;
    const unknown = moves.filter((op) => op.outcome === "unknown").length;
    if (records < acked || records > acked + unknown) {
      fail(`${session}: ${records} leaf records for ${acked} acknowledged and ${unknown} unanswered moves`);
    }

    // Acknowledged writes are stored in the order they were acknowledged: one acknowledged before
    // another was sent has the lower seq.
    const ackedWrites = sessionOps
      .filter((op) => op.outcome === "acked" && seqsOf(op).length > 0)
      .sort((a, b) => a.start - b.start);
    const byEnd = [...ackedWrites].sort((a, b) => a.end - b.end);
    let highest = -1;
    let highestOp: Op | undefined;
    let next = 0;
    for (const op of ackedWrites) {
      while (next < byEnd.length && (byEnd[next] as Op).end < op.start) {
        const done = byEnd[next] as Op;
        const top = Math.max(...seqsOf(done));
        if (top > highest) {
          highest = top;
          highestOp = done;
        }
        next++;
      }
      const low = Math.min(...seqsOf(op));
      if (low <= highest) {
        fail(
          `${session}: ${op.kind} sent after ${highestOp?.kind} at seq ${highest} was acknowledged got seq ${low}`,
        );
      }
    }
  }

  // If-Match writers that raced for the same head: one wins; when every one of them got an
  // answer, exactly one.
  const groups = new Map<number, AppendOp[]>();
  for (const op of ops) {
    if (op.kind === "append" && op.group !== undefined)
      groups.set(op.group, [...(groups.get(op.group) ?? []), op]);
  }
  for (const [group, racers] of groups) {
    const winners = racers.filter((op) => op.outcome === "acked").length;
    if (winners > 1) fail(`If-Match group ${group}: ${winners} writers won the same head`);
    const settled = racers.every((op) => op.outcome === "acked" || op.error === "leaf_conflict");
    if (settled && winners !== 1) fail(`If-Match group ${group}: ${winners} winners among answered writers`);
  }

  // No read saw part of a batch (in the session it was written to: a fork copies only the path
  // to its target, which may end inside a batch).
  const batches = new Map<string, string[]>();
  for (const op of ops) {
    if (op.kind === "append" && op.ids.length > 1) {
      for (const id of op.ids) batches.set(`${op.session}\n${id}`, op.ids);
    }
  }
  for (const snapshot of snapshots) {
    const seen = new Set(snapshot.ids);
    for (const id of snapshot.ids) {
      const batch = batches.get(`${snapshot.session}\n${id}`);
      if (batch && !batch.every((other) => seen.has(other))) {
        fail(`${snapshot.session}: a read saw part of the batch ${batch[0]}`);
        break;
      }
    }
  }

  // Forks hold exactly their source's path to the target; failed ones left nothing.
  for (const op of ops) {
    if (op.kind !== "fork") continue;
    const entries = state.sessions.get(op.fork);
    if (op.outcome === "acked" && !entries && !mayBeDeleted(ops, op.fork))
      fail(`fork ${op.fork} of ${op.session} was acknowledged but is gone`);
    if (op.outcome === "failed" && entries)
      fail(`fork ${op.fork} failed (${op.error}; tries: ${op.tries}) but exists`);
    if (!entries) continue;
    if (!op.path && !state.sessions.has(op.session)) continue;
    const path = op.path ?? (await state.branch(op.session, op.target));
    const copied = entries.filter((entry) => entry.type !== "leaf").map((entry) => entry.id);
    if (JSON.stringify(copied.slice(0, path.length)) !== JSON.stringify(path)) {
      fail(`fork ${op.fork} does not hold the path to ${op.target} of ${op.session}`);
    }
  }

  // Every watcher got every seq once, in order.
  for (const watcher of watched) {
    const entries = state.sessions.get(watcher.session);
    if (!entries) continue;
    const expected = entries.map((entry) => entry.seq);
    if (JSON.stringify(watcher.seqs) !== JSON.stringify(expected)) {
      const got = watcher.seqs;
      const dup = got.find((seq, i) => got.indexOf(seq) !== i);
      const missing = expected.find((seq) => !got.includes(seq));
      fail(
        `${watcher.transport} watcher of ${watcher.session}: ${got.length} events for ${expected.length} entries` +
          (dup === undefined ? "" : `, seq ${dup} twice`) +
          (missing === undefined ? "" : `, seq ${missing} missing`),
      );
    } else if (JSON.stringify(watcher.ids) !== JSON.stringify(entries.map((entry) => entry.id))) {
      fail(`${watcher.transport} watcher of ${watcher.session}: events name other entries than stored`);
    }
  }

  // The tenant's listing is the sessions that exist.
  for (const id of state.named) {
    const exists = state.sessions.has(id);
    if (exists === state.listed.has(id)) continue;
    const what = exists ? "exists but is not listed" : "is listed but does not exist";
    fail(`session ${id} ${what}; what the run did to it: ${lifeOf(ops, id)}`);
  }

  const reported =
    violations.length > MAX_REPORTED
      ? [...violations.slice(0, MAX_REPORTED), `… and ${violations.length - MAX_REPORTED} more`]
      : violations;
  return { ok: violations.length === 0, violations: reported, counts };
}

/** What the run asked of a session's life (its creation as a fork, deletes, purges and restores), for a report. */
function lifeOf(ops: readonly Op[], session: string): string {
  const life = ops.filter(
    (op) =>
      (op.kind === "fork" && op.fork === session) ||
      (op.session === session &&
        (op.kind === "create" || op.kind === "delete" || op.kind === "purge" || op.kind === "restore")),
  );
  if (life.length === 0) return "nothing";
  return life
    .map(
      (op) =>
        `${op.kind} ${op.start}–${op.end} ms ${op.outcome}${op.error ? ` (${op.error})` : ""}${op.tries ? ` [${op.tries}]` : ""}`,
    )
    .join("; ");
}

/**
 * Whether `session` may be deleted at the end: a delete of it may have applied (acknowledged, or
 * unanswered), and no restore was acknowledged after it.
 */
function mayBeDeleted(ops: readonly Op[], session: string): boolean {
  const life = ops.filter(
    (op) => op.session === session && (op.kind === "delete" || op.kind === "purge" || op.kind === "restore"),
  );
  const lastDelete = life
    .filter((op) => (op.kind === "delete" || op.kind === "purge") && op.outcome !== "failed")
    .at(-1);
  if (!lastDelete) return false;
  return !life.some((op) => op.kind === "restore" && op.outcome === "acked" && op.start > lastDelete.end);
}
