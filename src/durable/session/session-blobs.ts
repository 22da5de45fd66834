import { type BlobRef, blobSlots, parseBlobRef, rewriteBlobSlots } from "../../core/blob-refs";
import type { StoredEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import { utf8Length } from "../../core/json";
import type { BlobValue } from "../blobs/blob-codec";
import { encodeBlob } from "../blobs/blob-codec";
import { checkReadBackSize, collectRefs, replaceRefs, scan } from "../blobs/blob-inputs";
import { purgedOwner } from "../blobs/blob-ledger";
import { BlobStore, inParallel } from "../blobs/blob-store";
import { answerRefsInStream } from "../blobs/blob-text";
import { signBlobUrl, urlTtlSeconds } from "../blobs/blob-urls";
import type { DurableEnv } from "../env";
import { errorSummary, logLine } from "../log-line";
import { directoryShard } from "../names";
import { objectCalls } from "../object-calls";
import { numberSetting } from "../settings";
import { type Sql, sqlOf } from "../sql";
import { tenantKey } from "../tenant-key";
import type { SessionStore } from "./session-store";
import type { PreparedBlobs } from "./session-writes";

/*
 * A session's blobs (core's blob-refs.ts says what they are; docs/placement.md, "Blobs in R2").
 * Before a write: references a client wrote are read back into values, the write is planned once
 * without writing to see which values it stores as blobs (the plan refuses a write the session's
 * room cannot take), and those are claimed in the tenant's ledger and uploaded; the write itself
 * then stores references in their place (`externalize`).
 * Whatever leaves the object gets the values back: entries (`fill`), contexts and event streams
 * (`rehydrateStream`: the references in their JSON), a WebSocket's replay from a
 * set read ahead (`warm`); or, asked for, short-lived signed URLs instead. The session's
 * `session_blobs` table lists what it claimed; when it is purged it gives its claims up (`release`).
 * A write that claimed blobs and was not committed (refused by its room, which another write took
 * while its blobs were uploaded, or by anything else) gives back those no entry holds (`ended`).
 */

/** What the router asks of a write: values of at least `minBytes` (UTF-8) stored as blobs. */
export interface BlobPolicy {
  minBytes: number;
}

/** How blobs come back in a context or event stream: their values, or signed URLs on `origin`. */
export type BlobAnswer = { urls: false } | { urls: true; origin: string };

/**
 * Characters of entries a WebSocket's replay round is read ahead for: the event hub sends a round
 * of up to 1 MiB (its SOCKET_REPLAY_CHARS) and one entry past it.
 */
const WARM_CHARS = 2 * 1024 * 1024;

/** The default of BLOB_MIN_BYTES: 64 KiB. */
export const DEFAULT_BLOB_MIN_BYTES = 64 * 1024;

/**
 * The least BLOB_MIN_BYTES: 1 KiB, well past a reference's length in an entry (REF_JSON_CHARS), so
 * every value stored as a blob makes its row smaller and the row is found as holding one
 * (`blob_bytes > 0`: what forks and replays look for).
 */
export const LEAST_BLOB_MIN_BYTES = 1024;

/** The policy a router applies to a tenant's writes: none without a bucket. */
export function blobPolicy(env: Pick<DurableEnv, "BLOBS" | "BLOB_MIN_BYTES">): BlobPolicy | undefined {
  if (!env.BLOBS) return undefined;
  return {
    minBytes: numberSetting(env.BLOB_MIN_BYTES, DEFAULT_BLOB_MIN_BYTES, { min: LEAST_BLOB_MIN_BYTES }),
  };
}

/**
 * A blob the object's writes under way prepared: how many of them, whether one of them claimed it
 * (the session had not recorded it), whether one that ended wrote it (an entry holds it).
 */
interface BlobUse {
  writes: number;
  claimed: boolean;
  held: boolean;
}

/** A reference to a blob the tenant does not store (`blob`: its kind and SHA-256). */
function notStored(blob: string | undefined): SessionError {
  return new SessionError("invalid_request", "an entry refers to a blob this tenant does not store", {
    blob,
  });
}

export class SessionBlobs {
  /** The object's environment, in its jurisdiction (its bucket, the directory's shards, settings). */
  readonly #env: DurableEnv;
  /** The object's own jurisdiction, which its blob URLs name. */
  readonly #jurisdiction: string | undefined;
  readonly #storage: DurableObjectStorage;
  readonly #sql: Sql;
  readonly #session: SessionStore;
  #bucket: { tenant: string; store: BlobStore } | undefined;
  #hasBlobs: boolean | undefined;
  /** Values read ahead for a WebSocket's replay round (see `warm`). */
  #warm = new Map<string, string>();
  /** The blobs of the writes under way, by reference (see `ended`). */
  #uses = new Map<string, BlobUse>();
  /** Claims being given back, by reference: a claim of the same blob waits for its end. */
  #givingBack = new Map<string, Promise<void>>();

  /** The blobs of the object `ctx` holding `session`, `env` its environment in its jurisdiction. */
  constructor(env: DurableEnv, ctx: DurableObjectState, session: SessionStore) {
    this.#env = env;
    this.#jurisdiction = ctx.id.jurisdiction;
    this.#storage = ctx.storage;
    this.#sql = sqlOf(ctx.storage.sql);
    this.#session = session;
  }

  /**
   * What the object's own writes (a generation's answer) store as blobs: the policy the router
   * gives the writes it sends, from the same settings.
   */
  get policy(): BlobPolicy | undefined {
    return blobPolicy(this.#env);
  }

  /** Whether the session claimed any blob (its entries may hold references). */
  get hasBlobs(): boolean {
    this.#hasBlobs ??=
      this.#session.exists && this.#sql`SELECT 1 FROM session_blobs LIMIT 1`.toArray().length > 0;
    return this.#hasBlobs;
  }

  /** Forgets what it knew (the session's storage was dropped). */
  reset(): void {
    this.#hasBlobs = undefined;
    this.#bucket = undefined;
    this.#warm = new Map();
    this.#uses = new Map();
  }

  /** The tenant's blobs in the object's bucket; `unavailable` when the object has no bucket. */
  async #blobs(): Promise<BlobStore> {
    const { tenant } = this.#session.state;
    if (this.#bucket?.tenant === tenant) return this.#bucket.store;
    const bucket = this.#env.BLOBS;
    if (!bucket) {
      throw new SessionError(
        "unavailable",
        "this session holds blobs, but the service has no blob bucket bound (BLOBS) to read them from",
      );
    }
    const store = new BlobStore(bucket, await tenantKey(tenant));
    this.#bucket = { tenant, store };
    return store;
  }

  #owner(): string {
    const { header, incarnation } = this.#session.state;
    return `${header.id}\n${incarnation}`;
  }

  #ledger() {
    return directoryShard(this.#env, this.#session.state.tenant, 0);
  }

  /** Records blobs claimed and stored, with their sizes in an entry. */
  #record(blobs: Iterable<{ ref: string; jsonBytes: number }>): void {
    this.#storage.transactionSync(() => {
      for (const { ref, jsonBytes } of blobs) {
        this.#sql`INSERT OR IGNORE INTO session_blobs (ref, json_bytes) VALUES (${ref}, ${jsonBytes})`;
      }
    });
    this.#hasBlobs = true;
  }

  /** The references (of those given) this session claimed already. */
  #recorded(refs: readonly string[]): Set<string> {
    if (refs.length === 0 || !this.hasBlobs) return new Set();
    return new Set(
      this.#sql<{ ref: string }>`SELECT ref FROM session_blobs
        WHERE ref IN (SELECT value FROM json_each(${JSON.stringify(refs)}))`
        .toArray()
        .map((row) => row.ref),
    );
  }

  /**
   * Prepares the blobs of a write (see the file's comment): undefined when it holds no value large
   * enough and no reference, so the write goes as it always did. `plan` plans the write without
   * writing, from inputs and the entries replays are compared with: the entries it would store,
   * whose blob slots are read. A plan refuses a write the session cannot take as the write itself
   * would be, before any blob is claimed or uploaded; and before references are read back, a write
   * they would make too large for a body, an entry or `withinRoom` is refused. A reference to a blob
   * the tenant does not store, or a malformed one, is `invalid_request`. Nothing is written then.
   */
  async prepare(
    entries: readonly unknown[],
    policy: BlobPolicy | undefined,
    plan: (inputs: readonly unknown[], loaded: ReadonlyMap<string, StoredEntry>) => readonly StoredEntry[],
    withinRoom?: (bytes: number) => void,
  ): Promise<PreparedBlobs | undefined> {
    const found = { large: false, refs: false };
    scan(entries, policy?.minBytes ?? Number.POSITIVE_INFINITY, found);
    if (!found.refs && !(found.large && policy && this.#env.BLOBS)) {
      // No value will become a blob: entries named for a replay are still read whole.
      return this.hasBlobs ? this.#prepared(entries, await this.#loaded(entries), new Map()) : undefined;
    }
    const inputs = found.refs ? await this.#resolve(entries, withinRoom) : entries;
    const loaded = await this.#loaded(inputs);
    if (!policy || !this.#env.BLOBS) return this.#prepared(inputs, loaded, new Map());
    const values = new Map<string, BlobValue>();
    const pending: Promise<void>[] = [];
    for (const entry of plan(inputs, loaded)) {
      for (const slot of blobSlots(entry)) {
        if (values.has(slot.value) || slot.value.length * 3 < policy.minBytes) continue;
        if (utf8Length(slot.value) < policy.minBytes) continue;
        pending.push(
          encodeBlob(slot).then((value) => {
            if (value) values.set(slot.value, value);
          }),
        );
      }
    }
    await Promise.all(pending);
    const refs = [...new Set([...values.values()].map((value) => value.ref))];
    const known = this.#recorded(refs);
    // Counted as used at once, with what the session recorded: a write that ends meanwhile gives
    // back none of them.
    for (const ref of refs) {
      const use = this.#uses.get(ref) ?? { writes: 0, claimed: false, held: false };
      use.writes++;
      if (!known.has(ref)) use.claimed = true;
      this.#uses.set(ref, use);
    }
    try {
      await this.#claimAndUpload(values, known);
    } catch (error) {
      await this.ended({ refs }, false);
      throw error;
    }
    return this.#prepared(inputs, loaded, values, refs);
  }

  /**
   * References read back into values, once their sizes (which the session and the tenant's ledger
   * keep) show the write can be taken (`checkReadBackSize`); `invalid_request` for one whose blob
   * the tenant does not store.
   */
  async #resolve(entries: readonly unknown[], withinRoom?: (bytes: number) => void): Promise<unknown[]> {
    const refsOf = entries.map((entry) => {
      const refs = new Map<string, number>();
      collectRefs(entry, refs);
      return refs;
    });
    if (!this.#env.BLOBS) {
      throw new SessionError("invalid_request", "this service stores no blobs: an entry cannot refer to one");
    }
    const refs = new Set(refsOf.flatMap((counts) => [...counts.keys()]));
    checkReadBackSize(entries, refsOf, await this.#sizes(refs), withinRoom);
    const store = await this.#blobs();
    let values: Map<string, string>;
    try {
      values = await store.read(refs);
    } catch (error) {
      if (error instanceof SessionError && error.code === "unavailable") {
        throw notStored((error.details as { blob?: string } | undefined)?.blob);
      }
      throw error;
    }
    return replaceRefs(entries, values) as unknown[];
  }

  /**
   * The sizes in an entry of the blobs of these references: those this session claimed from its
   * own table, the others from the tenant's ledger; `invalid_request` for one the ledger does not know.
   */
  async #sizes(refs: ReadonlySet<string>): Promise<Map<string, number>> {
    const sizes = new Map<string, number>();
    if (this.hasBlobs && refs.size > 0) {
      for (const row of this.#sql<{ ref: string; bytes: number }>`SELECT ref, json_bytes AS bytes
        FROM session_blobs WHERE ref IN (SELECT value FROM json_each(${JSON.stringify([...refs])}))`) {
        sizes.set(row.ref, row.bytes);
      }
    }
    const rest = [...refs].filter((ref) => !sizes.has(ref));
    if (rest.length === 0) return sizes;
    const store = await this.#blobs();
    const keyOf = (ref: string) =>
      store.key(parseBlobRef(ref) as NonNullable<ReturnType<typeof parseBlobRef>>);
    const known = new Map(
      (await this.#ledger().blobSizes(rest.map(keyOf))).map((row) => [row.key, row.jsonBytes]),
    );
    for (const ref of rest) {
      const bytes = known.get(keyOf(ref));
      if (bytes === undefined) {
        const { kind, sha256 } = parseBlobRef(ref) as NonNullable<ReturnType<typeof parseBlobRef>>;
        throw notStored(`${kind}:${sha256}`);
      }
      sizes.set(ref, bytes);
    }
    return sizes;
  }

  /** The entries the inputs name (by id) that hold blobs, with their values (a replay compares them). */
  async #loaded(inputs: readonly unknown[]): Promise<Map<string, StoredEntry>> {
    if (!this.hasBlobs) return new Map();
    const ids: string[] = [];
    for (const input of inputs) {
      const id = (input as { id?: unknown } | null)?.id;
      if (typeof id === "string") ids.push(id);
    }
    const held = this.#session.reads.entriesHoldingBlobs(ids);
    if (held.length === 0) return new Map();
    return new Map((await this.fill(held)).map((entry) => [entry.id, entry]));
  }

  /**
   * Claims in the tenant's ledger the values' blobs the session did not record (`known`), uploads
   * those it does not hold yet, records them. A session purged meanwhile is refused (`not_found`)
   * by the claim, or by the confirmation of its uploads, which the ledger then deletes from the
   * bucket unless another session claims them.
   */
  async #claimAndUpload(values: ReadonlyMap<string, BlobValue>, known: ReadonlySet<string>): Promise<void> {
    const claimed = [...values.values()].filter((value) => !known.has(value.ref));
    if (claimed.length === 0) return;
    // A claim being given back reaches the ledger first: this claim must not be lost with it.
    await Promise.all(claimed.map((value) => this.#givingBack.get(value.ref)));
    const store = await this.#blobs();
    const byKey = new Map(claimed.map((value) => [store.key(value), value]));
    // The session as it was when claiming: a purge may drop it before the uploads are confirmed.
    const [ledger, owner] = [objectCalls(this.#ledger()), this.#owner()];
    const answers = await ledger.claimBlobs(
      owner,
      claimed.map((value) => ({ key: store.key(value), jsonBytes: value.jsonBytes })),
    );
    const uploads = answers
      .filter((answer) => "upload" in answer && answer.upload)
      .map((answer) => byKey.get(answer.key) as BlobValue);
    // Every upload settles before the ledger hears of them: should one fail, those that reached the
    // bucket are still confirmed, so that the ledger deletes them again if the session was purged.
    const uploaded: BlobValue[] = [];
    const failures: unknown[] = [];
    await inParallel(uploads, (value) =>
      store.put(value).then(
        () => void uploaded.push(value),
        (error: unknown) => void failures.push(error),
      ),
    );
    if (uploaded.length > 0) {
      await ledger.confirmBlobs(
        owner,
        uploaded.map((value) => ({ key: store.key(value), jsonBytes: value.jsonBytes })),
      );
    }
    if (failures.length > 0) throw failures[0];
    // Purged meanwhile (perhaps created anew under its id), the session holds none of these claims.
    if (this.#owner() !== owner) throw purgedOwner();
    this.#record(claimed);
  }

  #prepared(
    inputs: readonly unknown[],
    loaded: ReadonlyMap<string, StoredEntry>,
    values: ReadonlyMap<string, BlobValue>,
    refs: readonly string[] = [],
  ): PreparedBlobs {
    return {
      inputs,
      loaded,
      refs,
      externalize: (writes) =>
        values.size === 0
          ? [...writes]
          : writes.map((write) => {
              const { seq, ...entry } = write.entry;
              const stored = rewriteBlobSlots(entry, (slot) => values.get(slot.value)?.ref);
              if (stored === entry) return write;
              const json = JSON.stringify(stored);
              const bytes = utf8Length(json);
              return {
                entry: { ...stored, seq } as StoredEntry,
                json,
                bytes,
                blobBytes: write.bytes - bytes,
              };
            }),
    };
  }

  /**
   * A write the blobs were prepared for ended, `written` (committed: its entries hold them) or not.
   * Each blob the object's writes claimed for it is given back once the last of them ends, when none
   * wrote it: its claim in the tenant's ledger (which deletes it from the bucket unless another
   * session holds it) and its row in `session_blobs`. A blob the session had recorded before (an
   * entry may hold it) is kept. Answers the giving back, or nothing when nothing is given back;
   * should the ledger not answer, the claim stays until the session is purged.
   */
  ended(prepared: Pick<PreparedBlobs, "refs"> | undefined, written: boolean): Promise<void> | undefined {
    const unheld: string[] = [];
    for (const ref of prepared?.refs ?? []) {
      const use = this.#uses.get(ref);
      if (!use) continue;
      use.writes--;
      if (written) use.held = true;
      if (use.writes > 0) continue;
      this.#uses.delete(ref);
      if (use.claimed && !use.held) unheld.push(ref);
    }
    if (unheld.length === 0 || !this.#session.exists) return undefined;
    return this.#giveBack(unheld);
  }

  async #giveBack(refs: readonly string[]): Promise<void> {
    // Taken out of the session's record at once: a write preparing them from now claims them
    // again, once the ledger has them back.
    const owner = this.#owner();
    this.#storage.transactionSync(() => {
      for (const ref of refs) this.#sql`DELETE FROM session_blobs WHERE ref = ${ref}`;
    });
    this.#hasBlobs = undefined;
    const given = (async () => {
      const store = await this.#blobs();
      const keys = refs.map((ref) =>
        store.key(parseBlobRef(ref) as NonNullable<ReturnType<typeof parseBlobRef>>),
      );
      await objectCalls(this.#ledger()).giveBackBlobs(owner, keys);
    })().catch((error: unknown) => {
      logLine({ type: "background", task: "give_back_blobs", error: errorSummary(error) }, "error");
    });
    const tracked = given.finally(() => {
      for (const ref of refs) if (this.#givingBack.get(ref) === tracked) this.#givingBack.delete(ref);
    });
    for (const ref of refs) this.#givingBack.set(ref, tracked);
    await tracked;
  }

  /**
   * Claims the blobs rows copied from a fork's source refer to, before they are written (so the
   * source's purge cannot take them away meanwhile).
   */
  async claimCopied(blobRefs: readonly string[]): Promise<void> {
    const refs = new Set(blobRefs);
    // Rows about to be written hold these: a write under way that prepared one of them and is
    // refused does not give it back.
    for (const ref of refs) {
      const use = this.#uses.get(ref);
      if (use) use.held = true;
    }
    const known = this.#recorded([...refs]);
    const claimed = [...refs].filter((ref) => !known.has(ref));
    if (claimed.length === 0) return;
    // A claim being given back reaches the ledger first: this claim must not be lost with it.
    await Promise.all(claimed.map((ref) => this.#givingBack.get(ref)));
    const store = await this.#blobs();
    const keyOf = (ref: string) =>
      store.key(parseBlobRef(ref) as NonNullable<ReturnType<typeof parseBlobRef>>);
    const refOf = new Map(claimed.map((ref) => [keyOf(ref), ref]));
    // The session as it was when claiming: a purge may drop it while the ledger answers.
    const owner = this.#owner();
    const answers = await objectCalls(this.#ledger()).claimBlobs(
      owner,
      claimed.map((ref) => ({ key: keyOf(ref) })),
    );
    if (this.#owner() !== owner) throw purgedOwner();
    const recorded: Array<{ ref: string; jsonBytes: number }> = [];
    for (const answer of answers) {
      if ("missing" in answer) {
        throw new SessionError(
          "unavailable",
          "a blob the fork's source holds is not in the tenant's ledger",
          {
            blob: answer.key,
          },
        );
      }
      recorded.push({ ref: refOf.get(answer.key) as string, jsonBytes: answer.jsonBytes });
    }
    this.#record(recorded);
  }

  /**
   * Gives up every claim of this session (it is being purged); blobs no session holds are deleted.
   * Without a bucket, a session that recorded blobs (stored while one was bound) still gives up
   * its claims: the ledger deletes those blobs once a bucket is bound again.
   */
  async release(): Promise<void> {
    try {
      if (!this.#session.exists || (!this.#env.BLOBS && !this.hasBlobs)) return;
      await objectCalls(this.#ledger()).releaseBlobs(this.#owner());
    } finally {
      this.reset();
    }
  }

  /** Entries with their blobs' values in place of references. */
  fill(entries: StoredEntry[]): Promise<StoredEntry[]> {
    return this.#filled(entries, () => true);
  }

  /**
   * Entries with the values of their text blobs (tool outputs) in place of references; an
   * image's stays a reference: for what reads an entry's text only.
   */
  fillText(entries: StoredEntry[]): Promise<StoredEntry[]> {
    return this.#filled(entries, (ref) => ref.kind === "txt");
  }

  /**
   * Characters the values of an entry's image blobs add to its JSON, references being in their
   * place: from the sizes the session recorded, without reading the values.
   */
  imageChars(entry: StoredEntry): number {
    if (!this.hasBlobs) return 0;
    const refs = blobSlots(entry)
      .map((slot) => slot.value)
      .filter((value) => parseBlobRef(value)?.kind === "b64");
    if (refs.length === 0) return 0;
    const sizes = new Map(
      this.#sql<{ ref: string; json_bytes: number }>`
        SELECT ref, json_bytes FROM session_blobs WHERE ref IN (SELECT value FROM json_each(${JSON.stringify(refs)}))`
        .toArray()
        .map((row) => [row.ref, row.json_bytes]),
    );
    // Base64 is ASCII: its JSON's bytes are its characters.
    return refs.reduce((sum, ref) => sum + (sizes.get(ref) ?? 0) - JSON.stringify(ref).length, 0);
  }

  async #filled(entries: StoredEntry[], wanted: (ref: BlobRef) => boolean): Promise<StoredEntry[]> {
    if (!this.hasBlobs) return entries;
    const refs = new Set<string>();
    for (const entry of entries) {
      for (const slot of blobSlots(entry)) {
        const ref = parseBlobRef(slot.value);
        if (ref && wanted(ref)) refs.add(slot.value);
      }
    }
    if (refs.size === 0) return entries;
    const values = await (await this.#blobs()).read(refs);
    return entries.map((entry) => rewriteBlobSlots(entry, (slot) => values.get(slot.value)));
  }

  /** What each reference of a context or event stream becomes: its value, or a signed URL. */
  async #answers(refs: string[], answer: BlobAnswer): Promise<Map<string, string>> {
    const store = await this.#blobs();
    if (!answer.urls) return store.read(refs);
    const secret = this.#env.BLOB_URL_SECRET;
    if (!secret)
      throw new SessionError("invalid_request", "this service signs no blob URLs (BLOB_URL_SECRET)");
    const expires = Math.floor(Date.now() / 1000) + urlTtlSeconds(this.#env.BLOB_URL_TTL_SECONDS);
    const urls = new Map<string, string>();
    for (const text of refs) {
      const ref = parseBlobRef(text);
      if (!ref) continue;
      const address = {
        jurisdiction: this.#jurisdiction,
        tenantKey: store.tenantKey,
        kind: ref.kind,
        sha256: ref.sha256,
      };
      urls.set(text, await signBlobUrl(secret, answer.origin, address, expires));
    }
    return urls;
  }

  /**
   * A stream of JSON text (a context, Server-Sent Events) with its references answered as it passes:
   * a chunk ending in the first part of a reference keeps that part for the next one.
   */
  async rehydrateStream(
    stream: ReadableStream<Uint8Array>,
    answer: BlobAnswer,
  ): Promise<ReadableStream<Uint8Array>> {
    if (!this.hasBlobs) return stream;
    // Without a bucket the references cannot be answered: refused before anything is sent.
    await this.#blobs();
    return answerRefsInStream(stream, (refs) => this.#answers(refs, answer));
  }

  /**
   * Reads ahead the values of the entries a WebSocket's replay round after `after` sends, for
   * `fromWarm`: a round is sent synchronously, so its values must be at hand before it starts.
   */
  async warm(after: number): Promise<void> {
    this.#warm = new Map();
    if (!this.hasBlobs || !this.#session.exists) return;
    const bound = this.#session.lastSeq();
    const refs = new Set<string>();
    let chars = 0;
    for (let cursor = after; cursor < bound && chars < WARM_CHARS; ) {
      const page = this.#session.reads.entriesAfter(cursor, bound, 64);
      if (page.length === 0) break;
      for (const entry of page) {
        const held = blobSlots(entry)
          .map((slot) => slot.value)
          .filter((value) => parseBlobRef(value));
        for (const ref of held) refs.add(ref);
        const sizes = held.length
          ? this.#sql<{ bytes: number }>`SELECT total(json_bytes) AS bytes FROM session_blobs
              WHERE ref IN (SELECT value FROM json_each(${JSON.stringify(held)}))`.one().bytes
          : 0;
        chars += JSON.stringify(entry).length + sizes;
        cursor = entry.seq;
        if (chars >= WARM_CHARS) break;
      }
    }
    if (refs.size > 0) this.#warm = await (await this.#blobs()).read(refs);
  }

  /**
   * Replayed entries with the values read ahead by `warm`, up to the first whose value was not:
   * the round stops there and the watcher is told to ask again, which reads the next ones ahead.
   */
  fromWarm(entries: StoredEntry[]): StoredEntry[] {
    if (!this.hasBlobs) return entries;
    const ready: StoredEntry[] = [];
    for (const entry of entries) {
      let missing = false;
      const filled = rewriteBlobSlots(entry, (slot) => {
        if (!parseBlobRef(slot.value)) return undefined;
        const value = this.#warm.get(slot.value);
        if (value === undefined) missing = true;
        return value;
      });
      if (missing) break;
      ready.push(filled);
    }
    return ready;
  }
}
