import { randomHex } from "../../core/bytes";
import { SessionError } from "../../core/errors";
import { errorSummary, logLine } from "../log-line";
import type { Reloadable } from "../transaction";
import { transaction } from "../transaction";
import type { Position } from "./offsets";
import type { RecordPage, StreamSources } from "./sources";
import type { StreamState, StreamStore } from "./store";
import { deadlineOf } from "./store";
import { TailWaiters } from "./waiters";

/*
 * What the parts of the protocol share inside one host object: its store, its waiting readers,
 * the way to its forks' sources, and the rules every request goes through first (a stream whose
 * time is up is retired before anyone sees it; a fork's data is its source's up to the fork
 * point, then its own).
 */

/** How soon the alarm comes back when a fork's source could not be told the fork is gone. */
const RELEASE_RETRY_MS = 30_000;

export interface StreamHostOptions {
  storage: DurableObjectStorage;
  store: StreamStore;
  /** How the host reaches its forks' sources (called when one is needed). */
  sources: () => StreamSources;
  /** The host's alarm should come by `at` (null: no stream needs it). */
  scheduleAlarm: (at: number | null) => void;
  /** Resolves once the alarm the host was asked for is set; a host whose streams fork none need not say. */
  alarmSet?: () => Promise<void>;
  /**
   * Whether the host's streams are there at all (always, unless said): a host whose streams go
   * with its own data (a session deleted) says they are not, and its readers find them gone.
   */
  present?: () => boolean;
  now?: () => number;
}

/** Bytes of a page's records. */
export function pageBytes(page: RecordPage): number {
  return page.end.bytes - page.start;
}

export class StreamContext {
  readonly storage: DurableObjectStorage;
  readonly store: StreamStore;
  readonly waiters = new TailWaiters();
  readonly now: () => number;
  readonly present: () => boolean;
  readonly #sources: () => StreamSources;
  readonly #scheduleAlarm: (at: number | null) => void;
  readonly #alarmSet: () => Promise<void>;
  /**
   * Tokens of the forks this host is making now: their releases wait while they are made. One
   * recorded by a host that reset midway is no longer here, and is released.
   */
  readonly #making = new Set<string>();
  #draining = false;

  constructor(options: StreamHostOptions) {
    this.storage = options.storage;
    this.store = options.store;
    this.#sources = options.sources;
    this.#scheduleAlarm = options.scheduleAlarm;
    this.#alarmSet = options.alarmSet ?? (async () => undefined);
    this.now = options.now ?? Date.now;
    this.present = options.present ?? (() => true);
  }

  get sources(): StreamSources {
    return this.#sources();
  }

  /**
   * Runs `run` in one transaction; should it fail, the store reads again what it holds in memory,
   * as does whatever else `held` names (a host's own state the transaction wrote).
   */
  transact<T>(run: () => T, held: readonly Reloadable[] = []): T {
    return transaction(this.storage, [this.store, ...held], run);
  }

  /** The stream under `key` as it stands now: one whose time is up is retired first. */
  async current(key: string): Promise<StreamState | undefined> {
    const stream = this.store.get(key);
    if (!stream || stream.deleted) return stream;
    const deadline = deadlineOf(stream);
    if (deadline !== null && deadline <= this.now()) {
      await this.retire(stream);
      return this.store.get(key);
    }
    return stream;
  }

  /** The stream a client asks about: 404 when there is none, 410 when it is kept only for its forks. */
  async visible(key: string): Promise<StreamState> {
    const stream = await this.current(key);
    if (!stream) throw new SessionError("not_found", "no stream at this path");
    if (stream.deleted) throw new SessionError("gone", "this stream was deleted");
    return stream;
  }

  /**
   * A read or write starts a sliding expiry's window again. The renewal is stored when it moves
   * the deadline by a tenth of the window or more, so a busy reader does not write on every read.
   */
  renew(stream: StreamState): void {
    const { ttlSeconds } = stream.expiry;
    if (ttlSeconds === null || stream.expiry.expiresAt !== null) return;
    const now = this.now();
    if (now - stream.renewedAt >= ttlSeconds * 100) this.transact(() => this.store.renew(stream, now));
  }

  /** A write to `stream` is committed: its readers are woken once it is durable. */
  written(stream: StreamState): void {
    void this.storage
      .sync()
      .catch(() => undefined)
      .then(() => this.waiters.wake(stream.incarnation));
  }

  /**
   * Deletes a stream (asked to, or its time is up): kept, marked deleted, while forks read it;
   * otherwise removed, and its own source (if it is a fork) told so.
   */
  async retire(stream: StreamState): Promise<void> {
    const current = this.store.get(stream.key);
    if (!current || current.incarnation !== stream.incarnation) return;
    this.transact(() => {
      if (current.forks > 0) this.store.markDeleted(current, this.now());
      else this.store.remove(current);
    });
    this.written(current);
    await this.drainReleases();
  }

  /**
   * A fork of `source` is about to be made: its release is recorded, and the alarm that retries it
   * set, before the source counts it, so that the count is given back should the fork not be made
   * (its create fails, the source's answer is lost, or the host resets midway). Answers the token
   * the source counts it by; `endFork` once the create is over, made or not.
   */
  async beginFork(source: string): Promise<string> {
    const token = randomHex(16);
    this.#making.add(token);
    this.transact(() => this.store.pendingFork(source, token));
    this.scheduleAlarm();
    try {
      await this.#alarmSet();
    } catch (error) {
      // Not asked yet, the source counted nothing.
      this.#making.delete(token);
      this.transact(() => this.store.dropRelease(token));
      throw error;
    }
    return token;
  }

  /**
   * The create of the fork of `token` is over: unless it made the fork (or its source refused it),
   * its source is told now, and by the alarm until it hears. Never throws: a create's own error
   * stays the answer.
   */
  async endFork(token: string): Promise<void> {
    this.#making.delete(token);
    await this.drainReleases();
  }

  /**
   * Tells sources that forks of theirs are gone (or were never made); what fails is tried again by
   * the alarm. A fork still being made waits.
   */
  async drainReleases(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    const due = () => this.store.releases().filter(({ token }) => token === null || !this.#making.has(token));
    try {
      for (let pending = due(); pending.length > 0; pending = due()) {
        for (const { id, source, token } of pending) {
          await this.sources.release(source, token);
          this.transact(() => this.store.released(id));
        }
      }
    } catch (error) {
      logLine({ type: "background", task: "stream_fork_release", error: errorSummary(error) }, "error");
    } finally {
      this.#draining = false;
      this.scheduleAlarm();
    }
  }

  /** When the host's alarm must come next: the first expiry, or a retry of releases. */
  scheduleAlarm(): void {
    const deadline = this.store.nextDeadline();
    const retry = this.store.releases().length > 0 ? this.now() + RELEASE_RETRY_MS : null;
    const times = [deadline, retry].filter((at): at is number => at !== null);
    this.#scheduleAlarm(times.length > 0 ? Math.min(...times) : null);
  }

  /** The alarm's work: retire the streams whose time is up, retry releases. */
  async alarm(): Promise<void> {
    for (const key of this.store.expired(this.now())) {
      const stream = this.store.get(key);
      if (stream) await this.retire(stream);
    }
    await this.drainReleases();
    this.scheduleAlarm();
  }

  /**
   * Records of a stream from number `from` on and before `until`, about `maxBytes` of them (at
   * least one; null when there are none): what a fork inherits comes from its source, the rest
   * from its own rows.
   */
  async page(stream: StreamState, from: number, until: number, maxBytes: number): Promise<RecordPage | null> {
    const fork = stream.fork;
    if (!fork || from >= fork.inherited.records) return this.store.page(stream, from, until, maxBytes);
    const limit = Math.min(until, fork.inherited.records);
    const inherited = await this.sources.read(fork.source, from, limit, maxBytes);
    if (!inherited) throw new SessionError("gone", "the data this fork inherits is gone");
    const page = { ...inherited, batchEnd: Math.min(inherited.batchEnd, limit) };
    const bytes = pageBytes(page);
    if (page.end.records < limit || bytes >= maxBytes || page.end.records >= until) return page;
    const own = this.store.page(stream, page.end.records, until, maxBytes - bytes);
    return own ? { ...page, end: own.end, pieces: [...page.pieces, ...own.pieces] } : page;
  }

  /** The record at number `n`, own or inherited, as a page of one. */
  recordAt(stream: StreamState, n: number): Promise<RecordPage | null> {
    return this.page(stream, n, stream.tail.records, 1);
  }

  /**
   * Checks that a reader's position is one of the stream's: its tail, or where one of its records
   * starts. Anything else is the caller's mistake (400), past the end included.
   */
  async checkPosition(stream: StreamState, position: Position): Promise<void> {
    const { tail } = stream;
    if (position.records > tail.records || position.bytes > tail.bytes) {
      throw new SessionError("invalid_request", "the offset is past the end of the stream", {
        records: position.records,
      });
    }
    if (position.records === tail.records && position.bytes === tail.bytes) return;
    const fork = stream.fork;
    const starts =
      fork && position.records < fork.inherited.records
        ? (await this.recordAt(stream, position.records))?.start === position.bytes
        : this.store.startsRecord(stream, position);
    if (!starts) throw new SessionError("invalid_request", "not an offset of this stream");
  }
}
