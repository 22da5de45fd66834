import { DurableObject } from "cloudflare:workers";
import type { Result } from "../../core/errors";
import { capture, SessionError } from "../../core/errors";
import type { StreamAppend, StreamHeader } from "../../core/stream-backup";
import type { DurableEnv } from "../env";
import { logBackgroundFailure, REQUEST_ID_HEADER } from "../log-line";
import { ObjectAlarm } from "../object-alarm";
import { objectCalls } from "../object-calls";
import { objectEnv } from "../placement/placed-env";

/** A stream object's own environment: its namespace is bound, since it runs in it. */
type StreamEnv = DurableEnv & Required<Pick<DurableEnv, "STREAMS">>;

import type { ExpiryOutcome } from "../types";
import { errorAnswer } from "./answers";
import { streamKeyOf, streamObjectName } from "./paths";
import { withinLatestExpiry } from "./protocol";
import type { AppendData, ForkPoint, ForkPointRequest, RecordPage, StreamSources } from "./sources";
import { StreamStore } from "./store";
import { REPORT_DELAY_MS, REPORT_RETRY_MS, StreamAccount } from "./stream-account";
import { DurableStreams } from "./streams";

/*
 * A standalone stream (`/v1/stream/…`) as a Durable Object: one object per tenant and path, the
 * sequencer of its stream, its SQLite the log. The router hands it the protocol request with the
 * stream's tenant and key; forks reach their sources' objects over RPC. What it holds counts
 * against its tenant's quotas and shows in the tenant's listing (stream-account.ts).
 *
 * A stream a tenant import is writing is whole or not there: until the import ends, clients find no
 * stream at its path (a create finds it taken), the tenant's listing leaves it out, and only the
 * import writes to it; one whose import never ends is dropped after IMPORT_PENDING_MS.
 */

/** Headers the router adds to the request it hands on: whose stream, and which (URI-encoded). */
export const STREAM_TENANT_HEADER = "x-stream-tenant";
export const STREAM_KEY_HEADER = "x-stream-key";

/** Where the object keeps its tenant and its stream's key (its first create writes them), for the work its alarm does. */
const TENANT_KEY = "tenant";
const KEY_KEY = "key";
/** Where the object keeps the claim of the tenant import writing its stream, until that import finishes. */
const IMPORT_KEY = "import";
/** A stream an import claimed and never finished (its Worker went away midway) is dropped after this long. */
export const IMPORT_PENDING_MS = 24 * 3600 * 1000;

/** A tenant import writing the stream: its token, and when the claim is dropped unless it ended. */
interface ImportClaim {
  token: string;
  dropAt: number;
}

/** The sources of a tenant's forks: each stream in its own object. */
class StreamObjectSources implements StreamSources {
  readonly #env: StreamEnv;
  readonly #tenant: string;

  constructor(env: StreamEnv, tenant: string) {
    this.#env = env;
    this.#tenant = tenant;
  }

  keyOf(path: string): string {
    return streamKeyOf(path);
  }

  #object(key: string) {
    return this.#env.STREAMS.getByName(streamObjectName(this.#tenant, key));
  }

  forkPoint(key: string, request: ForkPointRequest): Promise<ForkPoint> {
    return objectCalls(this.#object(key)).forkPoint(key, request);
  }

  read(key: string, from: number, until: number, maxBytes: number): Promise<RecordPage | null> {
    return objectCalls(this.#object(key)).readForFork(key, from, until, maxBytes);
  }

  appends(key: string, from: number, until: number, maxBytes: number): Promise<AppendData[]> {
    return objectCalls(this.#object(key)).appendsForFork(key, from, until, maxBytes);
  }

  async release(key: string, token: string | null): Promise<void> {
    await this.#object(key).releaseFork(key, token);
  }
}

export class StreamObject extends DurableObject<StreamEnv> {
  readonly #streams: DurableStreams;
  readonly #account: StreamAccount;
  /** The stream's key, from a request or the first create. */
  #key: string | undefined;
  /** The tenant of the request being answered, or the one stored by the first create. */
  #tenant: string | undefined;
  readonly #alarm: ObjectAlarm;
  /** When the stream's work (its expiry, its report) is next due, as this instance asked. */
  #alarmAt: number | undefined;

  constructor(ctx: DurableObjectState, env: StreamEnv) {
    super(ctx, env);
    const store = ctx.storage.transactionSync(() => new StreamStore(ctx.storage.sql));
    this.#streams = new DurableStreams({
      storage: ctx.storage,
      store,
      // Sources in the object's own jurisdiction (placed-env.ts).
      sources: () => new StreamObjectSources(objectEnv(env, ctx), this.#tenantOf()),
      scheduleAlarm: (at) => this.#schedule(at),
      alarmSet: () => this.#alarm.arm(),
    });
    this.#account = new StreamAccount(objectEnv(env, ctx), ctx.storage.kv, store);
    this.#alarm = new ObjectAlarm(ctx.storage, (task, error) =>
      logBackgroundFailure(task, ctx.storage.kv.get<string>(TENANT_KEY) ?? "", undefined, error),
    );
    this.#alarm.add(() => this.#alarmAt);
    this.#alarm.add(() => this.#importClaim()?.dropAt);
  }

  #importClaim(): ImportClaim | undefined {
    return this.ctx.storage.kv.get<ImportClaim>(IMPORT_KEY);
  }

  #tenantOf(): string {
    const tenant = this.#tenant ?? this.ctx.storage.kv.get<string>(TENANT_KEY);
    if (tenant === undefined) throw new Error("a stream object without a tenant was asked to reach another");
    return tenant;
  }

  /** Work due at `at`: a later time than one already asked for needs nothing more. */
  #schedule(at: number | null): void {
    if (at === null || (this.#alarmAt !== undefined && this.#alarmAt <= at)) return;
    this.#alarmAt = at;
    this.#alarm.armSoon("stream_alarm");
  }

  #keyOf(): string | undefined {
    return this.#key ?? this.ctx.storage.kv.get<string>(KEY_KEY);
  }

  /**
   * After work that may have changed the stream: its tenant's directory and ledger are told; of a
   * stream an import is writing, once the import is over.
   */
  async #changed(): Promise<void> {
    const key = this.#keyOf();
    const tenant = this.#tenant ?? this.ctx.storage.kv.get<string>(TENANT_KEY);
    if (key === undefined || tenant === undefined || this.#importClaim()) return;
    this.#schedule(await this.#account.changed(tenant, key));
  }

  /** A client's protocol request: while an import writes the stream, there is none (a create finds the path taken). */
  override async fetch(request: Request): Promise<Response> {
    if (!this.#importClaim()) return this.#answer(request);
    const requestId = request.headers.get(REQUEST_ID_HEADER);
    const error =
      request.method === "PUT"
        ? new SessionError("already_exists", "an import is writing a stream at this path")
        : new SessionError("not_found", "no stream at this path");
    const absent = errorAnswer(error, requestId);
    // An answer to HEAD has no body.
    return request.method === "HEAD" ? new Response(null, absent) : absent;
  }

  async #answer(request: Request): Promise<Response> {
    const tenant = decodeURIComponent(request.headers.get(STREAM_TENANT_HEADER) ?? "");
    const key = decodeURIComponent(request.headers.get(STREAM_KEY_HEADER) ?? "");
    this.#tenant = tenant;
    this.#key = key;
    const hook = this.#account.hook(tenant, key);
    const answer = await this.#streams.handle(request, key, request.headers.get(REQUEST_ID_HEADER), hook);
    if (this.ctx.storage.kv.get(KEY_KEY) === undefined && this.#streams.store.get(key)) {
      this.ctx.storage.kv.put(TENANT_KEY, tenant);
      this.ctx.storage.kv.put(KEY_KEY, key);
    }
    await this.#changed();
    return answer;
  }

  /**
   * Claims the path for the tenant import writing a stream there under `token`: from then on the
   * stream takes an import's writes (`importFetch`) from that import only. A stream at the path is
   * removed when an import made it and never finished, for the new import to write it again; a
   * stream made any other way is not claimed (false). @internal
   */
  async claimImport(key: string, token: string): Promise<boolean> {
    const unfinished = this.#importClaim() !== undefined;
    if (this.#streams.store.get(key) && !unfinished) return false;
    this.ctx.storage.kv.put(IMPORT_KEY, {
      token,
      dropAt: Date.now() + IMPORT_PENDING_MS,
    } satisfies ImportClaim);
    await this.#alarm.arm();
    // Its count in the tenant's ledger goes on to the stream written again.
    if (unfinished) await this.#streams.remove(key);
    return true;
  }

  /**
   * A protocol request of the import that claimed the stream under `token`, answered as a client's
   * is when no import writes the stream, but for a create's expiry later than a create takes, which
   * is brought back to the latest it takes (`withinLatestExpiry`, counted from the object's clock);
   * refused (`already_exists`) when another import claimed the stream since. @internal
   */
  async importFetch(token: string, request: Request): Promise<Response> {
    if (this.#importClaim()?.token !== token) {
      const taken = new SessionError("already_exists", "another import is writing this stream");
      return errorAnswer(taken, request.headers.get(REQUEST_ID_HEADER));
    }
    if (request.method !== "PUT") return this.#answer(request);
    return this.#answer(new Request(request, { headers: withinLatestExpiry(request.headers, Date.now()) }));
  }

  /**
   * The import that claimed the stream under `token` is over (written whole, or removed): the
   * stream is there for clients, and in its tenant's listing. @internal
   */
  async endImport(token: string): Promise<void> {
    if (this.#importClaim()?.token !== token) return;
    this.ctx.storage.kv.delete(IMPORT_KEY);
    await this.#changed();
    // The room the import was granted and did not use goes back once the stream is idle.
    if (this.#streams.store.get(this.#keyOf() ?? "")) this.#schedule(Date.now() + REPORT_DELAY_MS);
  }

  /**
   * Removes the stream an import made and never finished, and its count in the tenant's ledger.
   * Answers whether the ledger (and the directory, should it have heard of the stream) heard it.
   */
  async #dropImported(key: string): Promise<boolean> {
    await this.#streams.remove(key);
    const tenant = this.#tenant ?? this.ctx.storage.kv.get<string>(TENANT_KEY);
    if (tenant === undefined) return true;
    return (await this.#account.release(tenant, key)) && (await this.#account.report(tenant, key));
  }

  /** A claim whose import did not end in time: the stream it made is dropped, and the claim. */
  async #dropUnfinishedImport(): Promise<void> {
    const claim = this.#importClaim();
    const key = this.#keyOf();
    if (!claim || claim.dropAt > Date.now()) return;
    if (key !== undefined && !(await this.#dropImported(key))) {
      this.ctx.storage.kv.put(IMPORT_KEY, {
        ...claim,
        dropAt: Date.now() + REPORT_RETRY_MS,
      } satisfies ImportClaim);
      return;
    }
    this.ctx.storage.kv.delete(IMPORT_KEY);
  }

  /**
   * Retention: deletes the stream when nothing was written to it (or, with a sliding expiry, read
   * from it) since `before` (epoch milliseconds). @internal
   */
  async expireIdle(key: string, before: number): Promise<ExpiryOutcome> {
    this.#key = key;
    const outcome = await this.#streams.expireIdle(key, before);
    await this.#changed();
    return outcome;
  }

  /** A fork's source, asked by a client's create: none while an import writes it. @internal */
  forkPoint(key: string, request: ForkPointRequest): Promise<Result<ForkPoint>> {
    return capture(() => {
      if (this.#importClaim()) throw new SessionError("not_found", "no stream at this path");
      return this.#streams.forkPoint(key, request);
    });
  }

  /** @internal */
  readForFork(
    key: string,
    from: number,
    until: number,
    maxBytes: number,
  ): Promise<Result<RecordPage | null>> {
    return capture(() => this.#streams.readForFork(key, from, until, maxBytes));
  }

  /** A fork's inherited appends, for its tenant's backup. @internal */
  appendsForFork(key: string, from: number, until: number, maxBytes: number): Promise<Result<AppendData[]>> {
    return capture(() => this.#streams.appendsForFork(key, from, until, maxBytes));
  }

  /** The stream's header in its tenant's backup. @internal */
  exportHeader(key: string): Promise<Result<StreamHeader>> {
    return capture(() => this.#streams.exportHeader(key));
  }

  /** A page of the stream's appends for its tenant's backup. @internal */
  exportAppends(
    key: string,
    from: number,
    maxBytes: number,
  ): Promise<Result<{ appends: StreamAppend[]; next: number | null }>> {
    return capture(() => this.#streams.exportAppends(key, from, maxBytes));
  }

  /** @internal */
  async releaseFork(key: string, token: string | null): Promise<void> {
    await this.#streams.releaseFork(key, token);
    await this.#changed();
  }

  override async alarm(): Promise<void> {
    this.#alarmAt = undefined;
    await this.#dropUnfinishedImport();
    await this.#streams.alarm();
    const key = this.#keyOf();
    const tenant = this.ctx.storage.kv.get<string>(TENANT_KEY);
    // What the stream holds is reported (it grew), and the room it does not use handed back; of a
    // stream an import is writing, once the import is over.
    if (
      key !== undefined &&
      tenant !== undefined &&
      !this.#importClaim() &&
      !(await this.#account.report(tenant, key, true))
    ) {
      this.#schedule(Date.now() + REPORT_RETRY_MS);
    }
    // An import's claim still open comes back to the alarm when it is due.
    await this.#alarm.arm();
  }
}
