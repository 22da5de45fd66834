import { STREAM_CLAIM_PREFIX } from "../directory/stream-registry";
import type { DurableEnv } from "../env";
import { errorSummary, logLine } from "../log-line";
import { directoryShard, shardCount, shardOf } from "../names";
import { QuotaLedger } from "../quota-ledger";
import { quotasFor, tenantWide } from "../quotas";
import { unavailable } from "../transient";
import type { StreamReport } from "../types";
import type { AppendHook } from "./append-hook";
import type { StreamState, StreamStore } from "./store";
import { deadlineOf } from "./store";

/*
 * A stream object's side of its tenant. The tenant's quota ledger (tenant-ledger.ts) admits each
 * new stream (`maxStreams`) and grants it room to grow within `maxTenantBytes`, as it does a
 * session: a write that needs more than the stream was granted asks first, and the room it did not
 * use goes back once it is idle. The tenant's directory (stream-registry.ts) lists the stream,
 * counts it in the tenant's usage and finds it for retention: the object reports a stream made,
 * deleted or removed before it answers, and one that grew within REPORT_DELAY_MS (from its alarm);
 * a report that fails is tried again by the alarm.
 */

/** How soon after a write its stream's new size is reported (writes in between go in one report). */
export const REPORT_DELAY_MS = 1000;
/** How soon a report that failed is tried again. */
export const REPORT_RETRY_MS = 30_000;

/** Where the object keeps what it last reported, the shard it reports to, and its claim. */
const ACCOUNT_KEY = "account";

interface Reported {
  shard: number;
  /** What the directory last heard (`fingerprint`), or null before the first report. */
  heard: string | null;
  /**
   * Whether the ledger may count the stream (it admitted it or granted it room, and was not told
   * since that it is gone): kept with the rest, so that a stream removed after its object restarted
   * is released even when its directory never heard of it.
   */
  claimed?: boolean;
}

/** The bytes a stream holds itself: a fork's inherited data is its source's. */
export function ownBytes(stream: StreamState): number {
  return stream.tail.bytes - (stream.fork?.inherited.bytes ?? 0);
}

function stateOf(stream: StreamState | undefined): StreamReport["state"] {
  return stream === undefined ? "removed" : stream.deleted ? "deleted" : "live";
}

/** What a report says about a stream, but when it was last active (which alone is not reported). */
function fingerprint(stream: StreamState | undefined): string {
  if (!stream) return "removed";
  return JSON.stringify([stateOf(stream), ownBytes(stream), stream.closed, deadlineOf(stream)]);
}

/** The state a fingerprint holds. */
function stateIn(print: string): StreamReport["state"] {
  return print === "removed" ? "removed" : (JSON.parse(print) as [StreamReport["state"]])[0];
}

export class StreamAccount {
  readonly #env: DurableEnv;
  readonly #kv: SyncKvStorage;
  readonly #store: StreamStore;
  /** The bytes the stream may hold without asking the ledger again; unknown until it asks. */
  #claim: number | undefined;
  /** Settles sent to the ledger: one sent while a claim was asked came after it and shrank it. */
  #settles = 0;
  /** Claims asked of the ledger: one asked while a release was sent may count the stream again. */
  #asks = 0;
  readonly #ledger: QuotaLedger;

  constructor(env: DurableEnv, kv: SyncKvStorage, store: StreamStore) {
    this.#env = env;
    this.#kv = kv;
    this.#store = store;
    this.#ledger = new QuotaLedger(env);
  }

  /**
   * Asks the ledger for room. An answer that a settle sent meanwhile made stale (the ledger shrank
   * the claim after granting it) leaves the claim unknown, for the write to ask again.
   */
  async #ask(tenant: string, key: string, holds: number, wants: number, isNew: boolean): Promise<void> {
    const sessionId = `${STREAM_CLAIM_PREFIX}${key}`;
    const settles = this.#settles;
    this.#asks++;
    const claim = await this.#ledger.claim(tenant, { sessionId, holds, wants, newSession: isNew });
    if (!this.#reported(key).claimed) this.#record(key, { claimed: true });
    this.#claim = settles === this.#settles ? claim : undefined;
  }

  /**
   * What the stream's writes do for the quotas: before a write of so many bytes, room for them
   * (a new stream is admitted first); once written, in the write's transaction, a check that the
   * stream holds no more than it was granted (writes that raced for the same room).
   */
  hook(tenant: string, key: string): AppendHook {
    return {
      reserve: async (bytes) => {
        const quotas = quotasFor(this.#env.QUOTAS, tenant);
        const stream = this.#store.get(key);
        if (!stream) {
          if (tenantWide(quotas, "streams")) await this.#ask(tenant, key, 0, bytes, true);
          return;
        }
        if (quotas.maxTenantBytes === undefined) return;
        // Asked again until the claim holds the write: an answer made stale leaves it unknown.
        for (let held = this.#store.get(key); held; held = this.#store.get(key)) {
          const holds = ownBytes(held);
          if (this.#claim !== undefined && holds + bytes <= this.#claim) return;
          await this.#ask(tenant, key, holds, bytes, false);
        }
      },
      appended: () => {
        if (quotasFor(this.#env.QUOTAS, tenant).maxTenantBytes === undefined || this.#claim === undefined)
          return;
        const stream = this.#store.get(key);
        if (stream && ownBytes(stream) > this.#claim) {
          throw unavailable(
            "another write to the stream took the room this one was given; try again",
            "not_applied",
          );
        }
      },
      held: [],
    };
  }

  #reported(key: string): Reported {
    return (
      this.#kv.get<Reported>(ACCOUNT_KEY) ?? {
        shard: shardOf(`${STREAM_CLAIM_PREFIX}${key}`, shardCount(this.#env)),
        heard: null,
      }
    );
  }

  #record(key: string, change: Partial<Reported>): void {
    this.#kv.put(ACCOUNT_KEY, { ...this.#reported(key), ...change } satisfies Reported);
  }

  /** Tells the ledger the stream counts no more (told again, it changes nothing). */
  async #release(tenant: string, key: string): Promise<void> {
    const id = `${STREAM_CLAIM_PREFIX}${key}`;
    const asks = this.#asks;
    // Told even without tenant-wide quotas (see `SessionDirectory.releaseQuota`).
    await this.#ledger.release(tenant, id, tenantWide(quotasFor(this.#env.QUOTAS, tenant), "streams"));
    this.#claim = undefined;
    if (asks === this.#asks) this.#record(key, { claimed: false });
  }

  /**
   * After the object's work: a stream made, deleted or removed is reported now; one that only grew
   * or closed is reported a moment later, with the writes that follow. Answers when the host's
   * alarm should come to report (`report`), or null.
   */
  async changed(tenant: string, key: string): Promise<number | null> {
    const stream = this.#store.get(key);
    const { heard, claimed } = this.#reported(key);
    // Room the ledger granted a stream that is not here (a create that failed after asking, one
    // removed before its directory heard of it) goes back now, whatever the directory heard of the
    // path before.
    const unclaimed = !stream && claimed === true;
    if (!unclaimed && heard === fingerprint(stream)) return null;
    if (!unclaimed && heard !== null && stateIn(heard) === stateOf(stream))
      return Date.now() + REPORT_DELAY_MS;
    return (await this.report(tenant, key)) ? null : Date.now() + REPORT_RETRY_MS;
  }

  /**
   * The stream was removed before its directory ever heard of it (an import that never finished):
   * the ledger counts it no more. Answers whether the ledger heard it.
   */
  async release(tenant: string, key: string): Promise<boolean> {
    try {
      await this.#release(tenant, key);
      return true;
    } catch (error) {
      logLine({ type: "background", task: "stream_release", error: errorSummary(error) }, "error");
      return false;
    }
  }

  /**
   * Tells the ledger of a stream gone (it counts no more) or idle (its unused room goes back), and
   * the directory what the stream is now. Answers whether both heard it.
   */
  async report(tenant: string, key: string, idle = false): Promise<boolean> {
    const stream = this.#store.get(key);
    const reported = this.#reported(key);
    const print = fingerprint(stream);
    try {
      const quotas = quotasFor(this.#env.QUOTAS, tenant);
      const id = `${STREAM_CLAIM_PREFIX}${key}`;
      if (!stream && (reported.claimed || (reported.heard !== null && reported.heard !== "removed"))) {
        await this.#release(tenant, key);
      } else if (stream && idle && quotas.maxTenantBytes !== undefined) {
        this.#claim = undefined;
        this.#settles++;
        await this.#ledger.settle(tenant, id, ownBytes(stream));
      }
      // A stream never made (a create that failed) was never listed.
      if (print === reported.heard || (!stream && reported.heard === null)) return true;
      const report: StreamReport = {
        key,
        version: this.#ledger.nextSeq(),
        state: stateOf(stream),
        contentType: stream?.contentType ?? "",
        bytes: stream ? ownBytes(stream) : 0,
        closed: stream?.closed ?? false,
        activeAt: stream?.renewedAt ?? Date.now(),
        expiresAt: stream ? deadlineOf(stream) : null,
        tenant,
        shard: reported.shard,
      };
      await directoryShard(this.#env, tenant, reported.shard).reportStream(report);
      this.#record(key, { heard: print });
      return true;
    } catch (error) {
      logLine({ type: "background", task: "stream_report", error: errorSummary(error) }, "error");
      return false;
    }
  }
}
