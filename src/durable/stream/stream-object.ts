import { DurableObject } from "cloudflare:workers";
import type { Result } from "../../core/internal";
import { capture } from "../../core/internal";
import type { DurableEnv } from "../env";
import { REQUEST_ID_HEADER } from "../log-line";
import { objectEnv } from "../placement/placed-env";

/** A stream object's own environment: its namespace is bound, since it runs in it. */
type StreamEnv = DurableEnv & Required<Pick<DurableEnv, "STREAMS">>;

import { streamKeyOf, streamObjectName } from "./paths";
import type { ForkPoint, ForkPointRequest, RecordPage, StreamSources } from "./sources";
import { StreamStore } from "./store";
import { DurableStreams } from "./streams";

/*
 * A standalone stream (`/v1/stream/…`) as a Durable Object: one object per tenant and path, the
 * sequencer of its stream, its SQLite the log. The router hands it the protocol request with the
 * stream's tenant and key; forks reach their sources' objects over RPC.
 */

/** Headers the router adds to the request it hands on: whose stream, and which (URI-encoded). */
export const STREAM_TENANT_HEADER = "x-stream-tenant";
export const STREAM_KEY_HEADER = "x-stream-key";

/** Where the object keeps its tenant (its first create writes it), for the work its alarm does. */
const TENANT_KEY = "tenant";

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

  async forkPoint(key: string, request: ForkPointRequest): Promise<Result<ForkPoint>> {
    return (await this.#object(key).forkPoint(key, request)) as Result<ForkPoint>;
  }

  async read(key: string, from: number, until: number, maxBytes: number): Promise<Result<RecordPage | null>> {
    return (await this.#object(key).readForFork(key, from, until, maxBytes)) as Result<RecordPage | null>;
  }

  async release(key: string): Promise<void> {
    await this.#object(key).releaseFork(key);
  }
}

export class StreamObject extends DurableObject<StreamEnv> {
  readonly #streams: DurableStreams;
  /** The tenant of the request being answered, or the one stored by the first create. */
  #tenant: string | undefined;
  /** The alarm this instance set, if any (a later one need not be set while it is pending). */
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
    });
  }

  #tenantOf(): string {
    const tenant = this.#tenant ?? this.ctx.storage.kv.get<string>(TENANT_KEY);
    if (tenant === undefined) throw new Error("a stream object without a tenant was asked to reach another");
    return tenant;
  }

  #schedule(at: number | null): void {
    if (at === null || (this.#alarmAt !== undefined && this.#alarmAt <= at)) return;
    this.#alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  override async fetch(request: Request): Promise<Response> {
    const tenant = decodeURIComponent(request.headers.get(STREAM_TENANT_HEADER) ?? "");
    const key = decodeURIComponent(request.headers.get(STREAM_KEY_HEADER) ?? "");
    this.#tenant = tenant;
    const answer = await this.#streams.handle(request, key, request.headers.get(REQUEST_ID_HEADER));
    if (answer.status === 201 && this.ctx.storage.kv.get(TENANT_KEY) === undefined) {
      this.ctx.storage.kv.put(TENANT_KEY, tenant);
    }
    return answer;
  }

  /** @internal */
  forkPoint(key: string, request: ForkPointRequest): Promise<Result<ForkPoint>> {
    return capture(() => this.#streams.forkPoint(key, request));
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

  /** @internal */
  releaseFork(key: string): Promise<void> {
    return this.#streams.releaseFork(key);
  }

  override async alarm(): Promise<void> {
    this.#alarmAt = undefined;
    await this.#streams.alarm();
  }
}
