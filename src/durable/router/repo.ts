import type { SessionEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import { checkCreateOptions } from "../../core/given-input";
import { newSessionHeader } from "../../core/header";
import { checkSessionId, newId } from "../../core/ids";
import type { ImportedSession } from "../../core/interchange";
import { writeImport } from "../../core/interchange";
import { utf8Length } from "../../core/json";
import type { LocationHint } from "../../core/location";
import type { NumberedLine } from "../../core/ndjson";
import type { SessionRepo } from "../../core/repo";
import type { TenantSearchOptions, TenantSearchPage } from "../../core/search";
import { Session } from "../../core/session";
import type {
  CreateSessionOptions,
  ForkOptions,
  ListOptions,
  SessionHeader,
  SessionInfo,
  SessionPage,
} from "../../core/session-schemas";
import type { SyncResult } from "../../core/sync-import";
import { openIfExists, syncImport } from "../../core/sync-import";
import type { ExistingSessions, TenantImportReport } from "../../core/tenant-stream";
import { exportTenant, importTenant } from "../../core/tenant-stream";
import type { DurableEnv } from "../env";
import { directoryShard, directoryShards, sessionObjectName, shardCount, shardOf } from "../names";
import { type ObjectCalls, objectCalls } from "../object-calls";
import { tenantEnv } from "../placement/placed-env";
import type { Quotas } from "../quotas";
import { quotasFor } from "../quotas";
import { recoveryWindowMs } from "../session/object-state";
import type { BlobPolicy } from "../session/session-blobs";
import { blobPolicy } from "../session/session-blobs";
import type { SessionObject } from "../session/session-object";
import { partlyApplied } from "../transient";
import type { ForkBegin, Retention, StreamUsage } from "../types";
import { mergeEventStreams, mergePages, mergeSearchResults } from "./directory-shards";
import { type SessionCreator, SessionObjectStorage } from "./session-object-storage";
import { streamBackupSource, streamBackupTarget } from "./tenant-stream-backup";
import type { StreamListRequest, StreamPage } from "./tenant-streams";
import { listTenantStreams, tenantStreamUsage } from "./tenant-streams";
import type { TenantUsage } from "./tenant-usage";
import { tenantUsage } from "./tenant-usage";

/**
 * Removes what a fork that failed began: `removed`; `none` when its object holds no session it made
 * (none was created, or one listed, which is not removed); `left` when it could not be removed.
 */
async function removeBegun(storage: SessionObjectStorage): Promise<"removed" | "none" | "left"> {
  try {
    await storage.delete();
    return "removed";
  } catch (error) {
    return error instanceof SessionError && error.code === "not_found" ? "none" : "left";
  }
}

/** Bytes entries take once stored (their JSON, as every backend writes it). */
function storedBytes(entries: readonly SessionEntry[]): number {
  let bytes = 0;
  for (const entry of entries) bytes += utf8Length(JSON.stringify(entry));
  return bytes;
}

/**
 * What a page of the listing, or an answer of the tenant search, holds at most of its sessions'
 * infos as JSON, in characters: one of sessions with large system prompts or metadata holds fewer
 * than its `limit` (one at least), and goes on with its cursor.
 */
const PAGE_INFO_CHARS = 16 * 1024 * 1024;

/** A tenant's sessions, each in its own Durable Object, listed by the tenant's directory. */
export class DurableRepo implements SessionRepo, SessionCreator {
  readonly #env: DurableEnv;
  readonly tenant: string;

  /**
   * The tenant's sessions, in the namespaces of the jurisdiction it is pinned to (placed-env.ts).
   * Whether the tenant's sessions are there is `checkPlacement`'s to say: call it first.
   */
  constructor(env: DurableEnv, tenant: string) {
    this.#env = tenantEnv(env, tenant);
    this.tenant = tenant;
  }

  /**
   * A handle on a session without checking that it exists (every call on it does). `location` is
   * given only by the calls that create the session: a hint counts when an object is first made.
   * @internal
   */
  storage(id: string, location?: LocationHint): SessionObjectStorage {
    return this.#handle(id, location, undefined);
  }

  /**
   * A session's object, called directly: each call is the object's method of that name, answering
   * its value (its error thrown again). What takes several calls (paged reads, a fork, a compaction's
   * path, a session being built) is `storage`'s. @internal
   */
  object(id: string): ObjectCalls<SessionObject> {
    return objectCalls(this.stub(id));
  }

  /** The stub of a session's object: for what crosses as a request (a WebSocket, a stream's protocol). @internal */
  stub(id: string, location?: LocationHint): DurableObjectStub<SessionObject> {
    checkSessionId(id);
    const name = sessionObjectName(this.tenant, id);
    return location === undefined
      ? this.#env.SESSIONS.getByName(name)
      : this.#env.SESSIONS.getByName(name, { locationHint: location });
  }

  /** A handle on a session; with `builder`, the handle of the fork or import building it. */
  #handle(id: string, location: LocationHint | undefined, builder: string | undefined): SessionObjectStorage {
    return new SessionObjectStorage(this, id, this.stub(id, location), builder);
  }

  /**
   * What of a write is stored as blobs: values from BLOB_MIN_BYTES, when the tenant's place has a bucket.
   * @internal
   */
  get blobPolicy(): BlobPolicy | undefined {
    return blobPolicy(this.#env);
  }

  /** How long a deleted session stays restorable. @internal */
  get recoveryMs(): number {
    return recoveryWindowMs(this.#env);
  }

  /** The directory shard a new session reports to, for its whole life. */
  #shardFor(id: string): number {
    return shardOf(id, shardCount(this.#env));
  }

  /**
   * @internal creates the object of a new session (about to receive `bytes` of entries): listed at
   * once (`publish`), or found only through the handle answered until its `publish()`.
   */
  async initialize(
    header: SessionHeader,
    publish: boolean,
    options: { bytes?: number; location?: LocationHint } = {},
  ): Promise<SessionObjectStorage> {
    const { location, bytes } = options;
    const storage = this.#handle(header.id, location, publish ? undefined : newId());
    await storage.init(this.tenant, header, { bytes, shard: this.#shardFor(header.id) });
    return storage;
  }

  /**
   * @internal creates a fork's object (see `SessionObjectStorage.fork`), which lists it as soon as
   * it begins; answers its info. A fork that fails to begin is removed, and its source lets go of
   * the path it kept for it. One found listed is whole (what followed its listing failed, or its
   * answer was lost): it is the answer. One neither removed nor listed may still copy from its
   * source, which keeps the path until the fork lets go of it, once copied or purged.
   */
  async beginFork(
    header: SessionHeader,
    fork: ForkBegin,
    location?: LocationHint,
  ): Promise<{ storage: SessionObjectStorage; info: SessionInfo }> {
    const storage = this.#handle(header.id, location, newId());
    try {
      const info = await storage.init(this.tenant, header, {
        bytes: fork.start.figures.bytes,
        fork,
        shard: this.#shardFor(header.id),
      });
      return { storage, info };
    } catch (error) {
      // A session that has the fork's id already refused it before anything of the fork began.
      const begun = !(error instanceof SessionError && error.code === "already_exists");
      const removal = begun ? await removeBegun(storage) : "removed";
      if (removal !== "removed") {
        // Whether it is listed unknown, it may be copying: its source keeps the path for it.
        const info = await storage.listedInfo().catch(() => {
          throw partlyApplied(error);
        });
        if (info) return { storage, info };
        // Left behind unlisted (until its object drops it), what it began may be read.
        if (removal === "left") throw partlyApplied(error);
        // None was made (refused by a quota, or its id still held by a deleted session): nothing to remove.
      }
      const { hold } = fork.start;
      if (hold !== undefined)
        await this.storage(fork.sourceId)
          .releaseFork(hold)
          .catch(() => undefined);
      throw error;
    }
  }

  /** The tenant's quotas (see quotas.ts). */
  quotas(): Quotas {
    return quotasFor(this.#env.QUOTAS, this.tenant);
  }

  /** Sessions, entries and bytes the tenant stores, as its sessions last reported them. */
  usage(): Promise<TenantUsage> {
    return tenantUsage(this.#env, this.tenant);
  }

  /** A page of the tenant's streams (`/v1/stream/*`), by path. */
  listStreams(request: StreamListRequest): Promise<StreamPage> {
    return listTenantStreams(this.#env, this.tenant, request);
  }

  /** The tenant's streams and the bytes they hold, as they last reported them. */
  streamUsage(): Promise<StreamUsage> {
    return tenantStreamUsage(this.#env, this.tenant);
  }

  /** The tenant's blobs (each counted once, however many sessions hold it), from its ledger. */
  blobUsage(): Promise<{ blobs: number; bytes: number }> {
    return directoryShard(this.#env, this.tenant, 0).blobUsage();
  }

  async create(options: CreateSessionOptions = {}): Promise<Session> {
    return new Session(await this.initialize(newSessionHeader(checkCreateOptions(options)), true));
  }

  /** Creates a session (its object near `location`, when given) and answers its info in one call. */
  async createSession(options: CreateSessionOptions = {}, location?: LocationHint): Promise<SessionInfo> {
    const header = newSessionHeader(checkCreateOptions(options));
    return this.storage(header.id, location).init(this.tenant, header, { shard: this.#shardFor(header.id) });
  }

  async open(id: string): Promise<Session> {
    const storage = this.storage(id);
    await storage.getLeafId();
    return new Session(storage);
  }

  /** A page of the tenant's sessions: every directory shard asked at once, their pages merged. */
  async list(options: ListOptions = {}): Promise<SessionPage> {
    const shards = directoryShards(this.#env, this.tenant);
    // Shared by the shards: what the Worker holds of a page does not grow with them.
    const maxChars = PAGE_INFO_CHARS / shards.length;
    const pages = await Promise.all(shards.map((shard) => objectCalls(shard).list(options, maxChars)));
    return mergePages(pages, options);
  }

  /** The tenant's sessions created, updated and deleted from now, as Server-Sent Events. */
  async events(): Promise<ReadableStream<Uint8Array>> {
    const shards = directoryShards(this.#env, this.tenant);
    const streams = await Promise.allSettled(shards.map((shard) => objectCalls(shard).events()));
    const refused = streams.find((stream) => stream.status === "rejected");
    if (refused) {
      // A shard said no: the streams the others opened are let go.
      for (const stream of streams) if (stream.status === "fulfilled") await stream.value.cancel();
      throw refused.reason;
    }
    return mergeEventStreams(
      streams.map((stream) => (stream as PromiseFulfilledResult<ReadableStream<Uint8Array>>).value),
    );
  }

  /** The tenant's sessions best matching a query, from the directory shards (no session is opened). */
  async search(options: TenantSearchOptions): Promise<TenantSearchPage> {
    const shards = directoryShards(this.#env, this.tenant);
    const maxChars = PAGE_INFO_CHARS / shards.length;
    const answers = await Promise.all(shards.map((shard) => objectCalls(shard).search(options, maxChars)));
    return mergeSearchResults(answers, options);
  }

  restore(id: string): Promise<SessionInfo> {
    return this.object(id).restore();
  }

  purge(id: string): Promise<void> {
    return this.object(id).purge();
  }

  /** The tenant's retention, as its first directory shard holds it. */
  retention(): Promise<Retention> {
    return directoryShard(this.#env, this.tenant, 0).retention();
  }

  /** Sets the tenant's retention on every directory shard (each sweeps its own sessions). */
  async setRetention(retention: Retention): Promise<Retention> {
    await Promise.all(
      directoryShards(this.#env, this.tenant).map((shard, index) =>
        shard.setRetention(retention, this.tenant, index),
      ),
    );
    return retention;
  }

  /** Every session and stream of the tenant as one stream of lines (see core's tenant-stream.ts). */
  exportTenant(cursor: string | null = null): AsyncGenerator<string> {
    return exportTenant(
      {
        list: (options) => this.list(options),
        open: async (id) => new Session(this.storage(id)),
        streams: streamBackupSource(this.#env, this.tenant),
      },
      cursor,
    );
  }

  /**
   * Writes the sessions of a tenant stream. Each is listed once all its entries are written; one a
   * previous import left incomplete (its id taken, not listed) is written again from the start.
   */
  importTenant(
    lines: AsyncIterable<NumberedLine>,
    existing: ExistingSessions,
    location?: LocationHint,
  ): Promise<TenantImportReport> {
    return importTenant(
      lines,
      {
        begin: (header) => this.initialize(newSessionHeader(header), false, { location }),
        finish: (storage) => (storage as SessionObjectStorage).publish(),
        ...streamBackupTarget(this.#env, this.tenant),
      },
      { existing },
    );
  }

  async delete(id: string): Promise<void> {
    await this.storage(id).delete();
  }

  async fork(id: string, targetId: string, options?: ForkOptions): Promise<Session> {
    return new Session(await this.storage(id).fork(targetId, options));
  }

  /**
   * Writes an imported session in bounded batches and lists it once it is complete. Under a byte
   * quota, the file's size as it will be stored is counted first, so a file too large for the
   * quotas is refused before anything is written.
   */
  async importSession(
    file: ImportedSession,
    options: { id?: string; location?: LocationHint } = {},
  ): Promise<Session> {
    const quotas = this.quotas();
    const limited = quotas.maxSessionBytes !== undefined || quotas.maxTenantBytes !== undefined;
    const bytes = limited ? storedBytes(file.entries) : 0;
    const { location, ...write } = options;
    const storage = (await writeImport(file, write, (header) =>
      this.initialize(newSessionHeader(header), false, { bytes, location }),
    )) as SessionObjectStorage;
    await storage.publish();
    return new Session(storage);
  }

  /**
   * Syncs a parsed file into its session (see `syncImport`); a new session is listed once complete.
   * Under a byte quota, what the sync adds is counted first, so a file too large for the quotas is
   * refused before anything is written.
   */
  async syncSession(
    file: ImportedSession,
    options: { id?: string; location?: LocationHint } = {},
  ): Promise<SyncResult> {
    const quotas = this.quotas();
    const limited = quotas.maxSessionBytes !== undefined || quotas.maxTenantBytes !== undefined;
    const { location, ...sync } = options;
    const result = await syncImport(file, sync, {
      open: (id) =>
        openIfExists(async () => {
          const storage = this.storage(id);
          await storage.getLeafId();
          return storage;
        }),
      create: (header) =>
        this.initialize(newSessionHeader(header), false, {
          bytes: limited ? storedBytes(file.entries) : 0,
          location,
        }),
      admit: async (storage, entries) => {
        if (limited) await (storage as SessionObjectStorage).checkRoom(storedBytes(entries));
      },
    });
    if (result.status === "created") await (result.session.storage as SessionObjectStorage).publish();
    return result;
  }

  async cleanup(): Promise<void> {}
}
