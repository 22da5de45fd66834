import { createClient, type RemoteRepo } from "../../src/client";
import { SessionError } from "../../src/core/errors";
import { seededRandom } from "../support/random";
import {
  type AppendOp,
  checkHistory,
  type FinalState,
  type ForkOp,
  type GenerationOp,
  mark,
  type Op,
  type PlannedOp,
  type Snapshot,
  type StoredEntryLike,
  type Verdict,
  type Watched,
} from "./history";
import {
  type Attempt,
  describeAttempt,
  type Fetch,
  faultyNetwork,
  type NetworkFaults,
  outcomeOf,
} from "./network";

/*
 * A soak: writers (each with its own seeded random, so the run's operations repeat from its seed)
 * append single entries and batches with idempotency keys, race If-Match appends for the same
 * head, move leaves, compact, fork (forks of forks still copying, and their sources purged while
 * they copy), delete and restore, through a network that loses requests
 * and answers; readers look for half-written batches; watchers follow sessions over Server-Sent
 * Events and WebSockets through cut streams and dropped sockets. Whatever else fails (the target
 * injects faults in the service itself), the history is then checked against the service's state.
 */

/** A WebSocket, wherever the run happens (the Workers pool, Node). */
export interface SocketLike {
  send(text: string): void;
  close(code?: number, reason?: string): void;
  onMessage(listener: (text: string) => void): void;
  onClose(listener: () => void): void;
}

/** The service under soak, and the faults it injects in itself. */
export interface SoakTarget {
  fetch: Fetch;
  baseUrl: string;
  token?: string;
  openSocket(path: string): Promise<SocketLike>;
  /** Starts the service's own faults (storage, resets, evictions, directory outages, alarms). */
  startFaults?(random: () => number, sessions: () => readonly string[]): void;
  /** Stops them; what they injected, by kind. */
  stopFaults?(): Promise<Record<string, number>>;
  /** Lets the service catch up once faults stopped (its directory reports, …). */
  settle?(sessions: readonly string[]): Promise<void>;
}

export interface SoakOptions {
  seed: number;
  writers: number;
  sessions: number;
  durationMs: number;
  /** Sessions followed by one SSE and one WebSocket watcher each. */
  watched: number;
  network: NetworkFaults;
  /** Chance a WebSocket watcher drops its socket after a message (and resumes). */
  dropSocket: number;
  /** Operations the writers make at least, however long that takes past `durationMs`. */
  minOperations?: number;
  log?: (line: string) => void;
}

export interface SoakReport {
  seed: number;
  verdict: Verdict;
  operations: number;
  acknowledged: number;
  seconds: number;
  /** Acknowledged operations a second, over the writers' time. */
  throughput: number;
  injected: Record<string, number>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long the listing may take to agree with the sessions once the writers are done. */
const LISTING_CATCH_UP_MS = 30_000;

function errorCode(error: unknown): string {
  return error instanceof SessionError ? error.code : "network";
}

interface SessionTrack {
  /** Message entries known to be stored (targets for leaf moves and forks). */
  entries: string[];
  /** Operations running on it now, and whether one needs it to itself. */
  running: number;
  exclusive: boolean;
  watched: boolean;
  deletable: boolean;
}

export async function runSoak(target: SoakTarget, options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  const began = Date.now();
  const clock = () => Date.now() - began;
  const ops: Op[] = [];
  const snapshots: Snapshot[] = [];
  const named = new Set<string>();
  const tracks = new Map<string, SessionTrack>();
  let network = options.network;
  let groups = 0;
  /** Faults the network injected, by kind (the service's own are counted by the target). */
  const lost: Record<string, number> = {};

  const clientFor = (random: () => number, attempts: Attempt[]): RemoteRepo =>
    createClient({
      baseUrl: target.baseUrl,
      token: target.token,
      fetch: faultyNetwork(
        target.fetch,
        () => network,
        random,
        (attempt) => attempts.push(attempt),
        lost,
      ),
      maxAttempts: 4,
      retryDelayMs: 25,
    });

  /** Runs one operation through the faulty network and records what it came to. */
  async function record<T>(
    random: () => number,
    op: PlannedOp,
    work: (repo: RemoteRepo) => Promise<T>,
    answered: (value: T, op: Op) => void = () => undefined,
  ): Promise<T | undefined> {
    const attempts: Attempt[] = [];
    const start = clock();
    try {
      const value = await work(clientFor(random, attempts));
      const done = { ...op, start, end: clock(), outcome: "acked" } as Op;
      answered(value, done);
      ops.push(done);
      return value;
    } catch (error) {
      ops.push({
        ...op,
        start,
        end: clock(),
        outcome: outcomeOf(attempts, false),
        error: errorCode(error),
        tries: attempts.map(describeAttempt).join(", "),
      } as Op);
      return undefined;
    }
  }

  /**
   * Forks `source` at `target` as `fork`; once acknowledged, the source's path to the target is
   * read (through the same network, tried until it answers) for the checker: what the fork must
   * hold whatever becomes of its source.
   */
  async function forkOf(
    random: () => number,
    source: string,
    target: string,
    fork: string,
  ): Promise<boolean> {
    named.add(fork);
    const made = await record(random, { kind: "fork", session: source, target, fork }, (repo) =>
      repo.fork(source, target, { id: fork }),
    );
    if (!made) return false;
    const op = ops.findLast((done) => done.kind === "fork" && done.fork === fork) as ForkOp;
    for (let tries = 0; tries < 20 && !op.path; tries++) {
      try {
        const path = await clientFor(random, []).storage(source).getBranch(target);
        op.path = path.map((entry) => entry.id);
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
    return true;
  }

  // The sessions, created through the same faulty network (a creation may be lost too).
  const setup = seededRandom(options.seed);
  const ids = Array.from({ length: options.sessions }, (_, i) => `soak-${options.seed}-${i}`);
  for (const [i, id] of ids.entries()) {
    named.add(id);
    for (let tries = 0; tries < 5; tries++) {
      const created = await record(setup, { kind: "create", session: id }, (repo) => repo.create({ id }));
      const last = ops[ops.length - 1] as Op;
      if (created || last.error === "already_exists") break;
    }
    tracks.set(id, {
      entries: [],
      running: 0,
      exclusive: false,
      watched: i < options.watched,
      deletable: i >= options.watched,
    });
  }

  // Watchers, from the first entry on.
  const watched: Watched[] = [];
  const stopWatching = new AbortController();
  const watchers: Promise<void>[] = [];
  for (const [i, id] of ids.slice(0, options.watched).entries()) {
    const sse: Watched = { session: id, transport: "sse", seqs: [], ids: [] };
    const socket: Watched = { session: id, transport: "websocket", seqs: [], ids: [] };
    watched.push(sse, socket);
    watchers.push(watchSse(id, sse, i), watchSocket(id, socket, i));
  }

  async function watchSse(id: string, into: Watched, i: number): Promise<void> {
    const random = seededRandom(options.seed * 7919 + i);
    const repo = createClient({
      baseUrl: target.baseUrl,
      token: target.token,
      fetch: faultyNetwork(target.fetch, () => network, random, undefined, lost),
    });
    try {
      for await (const event of repo
        .storage(id)
        .watch({ after: 0, retryDelayMs: 20, signal: stopWatching.signal })) {
        if (event.event !== "entry") continue;
        into.seqs.push(event.id);
        into.ids.push(event.data.id);
      }
    } catch (error) {
      if (!stopWatching.signal.aborted) log(`sse watcher of ${id} stopped: ${String(error)}`);
    }
  }

  async function watchSocket(id: string, into: Watched, i: number): Promise<void> {
    const random = seededRandom(options.seed * 104729 + i);
    while (!stopWatching.signal.aborted) {
      const after = into.seqs.at(-1) ?? 0;
      let socket: SocketLike;
      try {
        socket = await target.openSocket(`/v1/sessions/${id}/ws?after=${after}`);
      } catch {
        await sleep(20);
        continue;
      }
      // Stopped while it opened: the abort below was signalled already and would never come.
      if (stopWatching.signal.aborted) {
        socket.close(1000, "done");
        break;
      }
      await new Promise<void>((closed) => {
        let open = true;
        const close = () => {
          if (!open) return;
          open = false;
          closed();
        };
        stopWatching.signal.addEventListener("abort", () => {
          socket.close(1000, "done");
          close();
        });
        socket.onClose(close);
        socket.onMessage((text) => {
          if (!open) return;
          const message = JSON.parse(text) as { event: string; id?: number; data: Record<string, unknown> };
          if (message.event === "entry" && message.id !== undefined) {
            into.seqs.push(message.id);
            into.ids.push(message.data.id as string);
          } else if (message.event === "leaf" && typeof message.data.ack === "string") {
            socket.send(JSON.stringify({ ack: message.data.ack }));
          } else if (message.event === "more") {
            socket.send(JSON.stringify({ after: message.data.after, token: message.data.token }));
          }
          if (random() < options.dropSocket) {
            lost["dropped socket"] = (lost["dropped socket"] ?? 0) + 1;
            socket.close(1000, "dropped by the watcher");
            close();
          }
        });
      });
    }
  }

  target.startFaults?.(seededRandom(options.seed * 31), () => ids);

  const deadline = began + options.durationMs;
  const forks: string[] = [];

  function pick(random: () => number): string | undefined {
    const open = [...tracks.entries()].filter(([, track]) => !track.exclusive);
    if (open.length === 0) return undefined;
    return (open[Math.floor(random() * open.length)] as [string, SessionTrack])[0];
  }

  /** Runs `work` alone on the session (once the operations running on it are done); skipped if another has it. */
  async function exclusively(id: string, work: () => Promise<void>): Promise<void> {
    const track = tracks.get(id) as SessionTrack;
    if (track.exclusive) return;
    track.exclusive = true;
    while (track.running > 0) await sleep(2);
    try {
      await work();
    } finally {
      track.exclusive = false;
    }
  }

  async function writer(w: number): Promise<void> {
    const random = seededRandom(options.seed * 1_000_003 + w);
    let n = 0;
    const entry = (text: string) => {
      const word = mark(n, w);
      const id = `w${w}.${n}`;
      n++;
      return {
        word,
        input: {
          id,
          type: "message" as const,
          message: { role: "user" as const, content: `${word} ${text}`, timestamp: 1_700_000_000_000 },
        },
      };
    };
    while (Date.now() < deadline || ops.length < (options.minOperations ?? 0)) {
      const id = pick(random);
      if (!id) {
        await sleep(5);
        continue;
      }
      const track = tracks.get(id) as SessionTrack;
      const roll = random();
      const known = track.entries;
      if (roll < 0.12 && known.length > 0 && !track.watched) {
        // If-Match writers racing for the same head, alone on the session.
        await exclusively(id, async () => {
          const leaf = await clientFor(random, [])
            .storage(id)
            .getLeafId()
            .catch(() => null);
          if (leaf === null) return;
          const group = groups++;
          const racers = Array.from({ length: 3 }, () => entry("racing for the head"));
          await Promise.all(
            racers.map(({ word, input }) =>
              record(
                random,
                { kind: "append", session: id, ids: [input.id], marks: [word], expectedLeaf: leaf, group },
                (repo) => repo.storage(id).appendEntries([input], { expectedLeafId: leaf }),
                (result, op) => {
                  (op as AppendOp).seqs = result.entries.map((stored) => stored.seq);
                  known.push(input.id);
                },
              ),
            ),
          );
        });
        continue;
      }
      if (roll < 0.14 && track.deletable && !track.watched) {
        await exclusively(id, async () => {
          await record(random, { kind: "delete", session: id }, (repo) => repo.delete(id));
          await record(random, { kind: "restore", session: id }, (repo) => repo.restore(id));
        });
        continue;
      }
      track.running++;
      try {
        if (roll < 0.2 && known.length > 0) {
          const to = known[Math.floor(random() * known.length)] as string;
          await record(
            random,
            { kind: "leaf", session: id, target: to },
            (repo) => repo.storage(id).setLeafId(to),
            (stored, op) => {
              (op as { seq?: number }).seq = stored.seq;
            },
          );
        } else if (roll < 0.24 && known.length > 0) {
          const word = mark(n++, w);
          await record(
            random,
            { kind: "compact", session: id, mark: word },
            (repo) => repo.storage(id).compact({ summary: `${word} summary`, keepRecentTokens: 40 }),
            (stored, op) => {
              (op as { seq?: number }).seq = stored.seq;
            },
          );
        } else if (roll < 0.27 && known.length > 0 && forks.length < options.sessions) {
          const to = known[Math.floor(random() * known.length)] as string;
          const fork = `${id}.f${w}.${n++}`;
          forks.push(fork);
          if (await forkOf(random, id, to, fork)) {
            tracks.set(fork, { entries: [], running: 0, exclusive: false, watched: false, deletable: true });
            // Now and then the fork is forked in its turn while it copies, then purged before the
            // fork of it has copied its path: neither may lose anything.
            if (random() < 0.3) {
              const grandchild = `${fork}.g`;
              forks.push(grandchild);
              if ((await forkOf(random, fork, to, grandchild)) && random() < 0.5) {
                tracks.delete(fork);
                await record(random, { kind: "purge", session: fork }, (repo) => repo.purge(fork));
              }
            }
          }
        } else if (roll < 0.31 && known.length > 0) {
          // An answer written as a generation, chunk by chunk, then completed.
          const op: GenerationOp = {
            kind: "generation",
            session: id,
            marks: Array.from({ length: 3 }, () => mark(n++, w)),
          } as GenerationOp;
          await record(
            random,
            op,
            async (repo) => {
              const writer = await repo.storage(id).generate();
              op.generation = writer.id;
              for (const word of op.marks) await writer.append(`${word} `);
              return writer.complete();
            },
            (result, done) => {
              (done as GenerationOp).seq = result.entries[0]?.seq;
              known.push(result.generation.id);
            },
          );
        } else if (roll < 0.35) {
          const attempts: Attempt[] = [];
          const page = await clientFor(random, attempts)
            .storage(id)
            .getEntries({ limit: 1000 })
            .catch(() => undefined);
          if (page && page.length < 1000) snapshots.push({ session: id, ids: page.map((e) => e.id) });
        } else {
          const batch = Array.from({ length: roll < 0.55 ? 2 + Math.floor(random() * 4) : 1 }, () =>
            entry("a line of conversation, long enough to be a message"),
          );
          await record(
            random,
            {
              kind: "append",
              session: id,
              ids: batch.map((item) => item.input.id),
              marks: batch.map((item) => item.word),
            },
            (repo) => repo.storage(id).appendEntries(batch.map((item) => item.input)),
            (result, op) => {
              (op as AppendOp).seqs = result.entries.map((stored) => stored.seq);
              for (const item of batch) known.push(item.input.id);
            },
          );
        }
      } finally {
        track.running--;
      }
    }
  }

  await Promise.all(Array.from({ length: options.writers }, (_, w) => writer(w)));
  const seconds = (Date.now() - began) / 1000;
  const injected = { ...lost, ...((await target.stopFaults?.()) ?? {}) };
  network = { loseRequest: 0, loseAnswer: 0, cutStream: 0 };
  log(`writers done after ${seconds.toFixed(1)} s: ${ops.length} operations; settling`);
  await target.settle?.([...named]);

  const state = await finalState(target, named);
  // Watchers catch up with what was written (they were cut and dropped along the way).
  const caughtUp = Date.now() + 30_000;
  for (const watcher of watched) {
    const last = state.sessions.get(watcher.session)?.at(-1)?.seq ?? 0;
    while ((watcher.seqs.at(-1) ?? 0) < last && Date.now() < caughtUp) await sleep(20);
  }
  stopWatching.abort();
  await Promise.all(watchers);

  const verdict = await checkHistory(ops, snapshots, watched, state);
  const acknowledged = ops.filter((op) => op.outcome === "acked").length;
  return {
    seed: options.seed,
    verdict,
    operations: ops.length,
    acknowledged,
    seconds,
    throughput: acknowledged / seconds,
    injected,
  };
}

/** The service's state: each named session's entries (those that exist), the tenant's listing. */
async function finalState(target: SoakTarget, named: Set<string>): Promise<FinalState> {
  const repo = createClient({ baseUrl: target.baseUrl, token: target.token, fetch: target.fetch });
  const sessions = new Map<string, StoredEntryLike[]>();
  for (const id of named) {
    const storage = repo.storage(id);
    try {
      await storage.getInfo();
    } catch (error) {
      if (error instanceof SessionError && error.code === "not_found") continue;
      throw error;
    }
    const entries: StoredEntryLike[] = [];
    for (let after = 0; ; ) {
      const page = (await storage.getEntries({ after, limit: 1000 })) as unknown as StoredEntryLike[];
      entries.push(...page);
      if (page.length < 1000) break;
      after = (page.at(-1) as StoredEntryLike).seq;
    }
    sessions.set(id, entries);
  }
  const readListing = async () => {
    const listed = new Set<string>();
    for (let cursor: string | null | undefined; ; ) {
      const page = await repo.list({ limit: 200, cursor });
      for (const info of page.sessions) listed.add(info.id);
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    return listed;
  };
  // The listing follows the sessions by their reports to the directory, which a failed report
  // sends again after a growing pause: it gets time to catch up, and the checker judges where it
  // came to.
  const catchUp = Date.now() + LISTING_CATCH_UP_MS;
  let listed = await readListing();
  const agrees = () => [...named].every((id) => sessions.has(id) === listed.has(id));
  while (!agrees() && Date.now() < catchUp) {
    await sleep(250);
    listed = await readListing();
  }
  return {
    sessions,
    named,
    listed,
    branch: async (session, at) => (await repo.storage(session).getBranch(at)).map((entry) => entry.id),
  };
}
