import * as z from "zod";
import type { SessionEntry } from "./entries";
import { Id } from "./entries";
import { SessionError } from "./errors";
import { cursorValues, encodeCursor, listCursor, listedAfter } from "./info";
import type { ImportHeader } from "./interchange";
import { IMPORT_BATCH, IMPORT_BATCH_CHARS, ImportWarning, lineOfBatchError } from "./interchange";
import { parsedJsonProblem, tryParseJson } from "./json";
import { exportNative, NATIVE_FORMAT, parseNativeHeader } from "./native-format";
import type { NumberedLine } from "./ndjson";
import { lineError } from "./ndjson";
import { isRecord } from "./providers/incoming";
import type { Session } from "./session";
import type { ListOptions, SessionPage } from "./session-schemas";
import type { SessionStorage } from "./storage";
import type { StreamBackupSource, StreamBackupTarget } from "./stream-backup";
import { ImportedStreamStatus, StreamImports } from "./stream-backup";

/*
 * A whole tenant as one NDJSON stream, for backups: a line opening the stream, then each session
 * as its native export (its header line, then every entry in append order), each followed by a
 * `cursor` line once it is complete, and an `end` line:
 *
 *   {"type":"export","format":"cf-tenant","version":1,"cursor":null}
 *   {"type":"session","format":"cf-session",...}   ← a native export
 *   {"type":"message",...}
 *   {"type":"cursor","cursor":"…"}                 ← complete; `?cursor=` resumes after it
 *   …
 *   {"type":"end","sessions":1000}                 ← the stream is whole
 *
 * A session that fails while it is sent is followed by an `error` line instead of its cursor, and
 * an import drops it; one deleted while it is sent, by an `error` line with code `not_found`, and
 * an import skips it (one deleted before it is reached is not in the stream). Sessions come newest
 * first by creation (the order that never moves while the tenant keeps writing), a listing page at
 * a time, one page of entries at a time. Where the tenant
 * has streams (`/v1/stream/*`), they follow the sessions in path order, each with its appends
 * (stream-backup.ts), and the end line counts them too: `{"type":"end","sessions":1000,"streams":3}`.
 * A stream that fails while it is sent is followed by an `error` line naming its `path`.
 */

export const TENANT_FORMAT = "cf-tenant";
export const TENANT_VERSION = 1;

/** Sessions of a listing page read per step of an export. */
const EXPORT_PAGE = 50;

/** What an export reads: the tenant's listing and its sessions, and its streams where it has them. */
export interface TenantSource {
  list(options: ListOptions): Promise<SessionPage>;
  /** A session by id; reading it fails with `not_found` once it is gone. */
  open(id: string): Promise<Session>;
  streams?: StreamBackupSource["streams"];
}

/** The sort key of a stream's cursor line (a session's is its creation time). */
const STREAM_CURSOR_KEY = "stream";

/** The listing an export reads its sessions from, whose cursors are its sessions' cursor lines. */
const EXPORT_LISTING = { order: "created" } as const;

/**
 * Where a cut export resumes: after the stream a stream cursor line names, or after the session of
 * a session cursor line (a cursor of the listing by creation, unfiltered). Any other cursor is
 * `invalid_request`.
 */
export function exportResumption(cursor: string): { streamsAfter: string } | { sessionsAfter: string } {
  const [key, path, ...rest] = cursorValues(cursor);
  if (key === STREAM_CURSOR_KEY && typeof path === "string" && rest.length === 0)
    return { streamsAfter: path };
  listedAfter(cursor, EXPORT_LISTING);
  return { sessionsAfter: cursor };
}

function errorBody(error: unknown, otherwise: string): { code: string; message: string } {
  return error instanceof SessionError
    ? { code: error.code, message: error.message }
    : { code: "internal", message: otherwise };
}

function line(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

/** The tenant's sessions as one stream of lines, after `cursor` when resuming. */
export async function* exportTenant(
  source: TenantSource,
  cursor: string | null = null,
): AsyncGenerator<string> {
  yield line({ type: "export", format: TENANT_FORMAT, version: TENANT_VERSION, cursor });
  const resumed = cursor === null ? undefined : exportResumption(cursor);
  const streamsAfter = resumed && "streamsAfter" in resumed ? resumed.streamsAfter : undefined;
  let count = 0;
  let next: string | null = resumed && "sessionsAfter" in resumed ? resumed.sessionsAfter : null;
  if (streamsAfter === undefined)
    do {
      const page = await source.list({ ...EXPORT_LISTING, limit: EXPORT_PAGE, cursor: next });
      for (const info of page.sessions) {
        let sent = false;
        try {
          const lines = exportNative(await source.open(info.id));
          const header = await lines.next();
          if (header.done) continue;
          sent = true;
          yield header.value;
          for await (const text of lines) yield text;
        } catch (error) {
          // Deleted since the listing was read, before any of it was sent: it is simply not in the
          // tenant any more. Deleted part-way, its error line (`not_found`) says so.
          if (!sent && error instanceof SessionError && error.code === "not_found") continue;
          yield line({
            type: "error",
            id: info.id,
            error: errorBody(error, "the session could not be read"),
          });
          continue;
        }
        count++;
        yield line({ type: "cursor", cursor: listCursor(EXPORT_LISTING, info.createdAt, info.id) });
      }
      next = page.nextCursor;
    } while (next);
  if (!source.streams) {
    yield line({ type: "end", sessions: count });
    return;
  }
  let streams = 0;
  for await (const stream of source.streams(streamsAfter ?? null)) {
    const { path } = stream.header;
    yield line({ type: "stream", ...stream.header });
    try {
      for await (const append of stream.appends()) yield line({ type: "stream_append", ...append });
    } catch (error) {
      yield line({ type: "error", path, error: errorBody(error, "the stream could not be read") });
      continue;
    }
    streams++;
    yield line({ type: "cursor", cursor: encodeCursor(STREAM_CURSOR_KEY, path) });
  }
  // An end line of a tenant without streams reads as it always did.
  yield line({ type: "end", sessions: count, ...(streams > 0 ? { streams } : {}) });
}

export const ExistingSessions = z
  .enum(["skip", "refuse"])
  .meta({ description: "a session whose id is taken: left as it is (skip, default) or reported refused" });
export type ExistingSessions = z.infer<typeof ExistingSessions>;

export const ImportedSessionStatus = z
  .object({
    id: Id.nullable().meta({ description: "null when the header line could not be read" }),
    status: z.enum(["imported", "skipped", "refused", "failed"]),
    entries: z.number().int().optional().meta({ description: "entries written, when imported" }),
    error: z
      .object({ code: z.string(), message: z.string(), line: z.number().int().optional() })
      .optional()
      .meta({
        description:
          "why it was refused or failed, or skipped as deleted while it was exported (not_found); `line` is 1-based in the stream",
      }),
  })
  .meta({ id: "ImportedSessionStatus" });
export type ImportedSessionStatus = z.infer<typeof ImportedSessionStatus>;

export const TenantImportReport = z
  .object({
    imported: z.number().int(),
    skipped: z.number().int(),
    refused: z.number().int(),
    failed: z.number().int(),
    sessions: z.array(ImportedSessionStatus).meta({ description: "one per session of the stream, in order" }),
    streams: z
      .array(ImportedStreamStatus)
      .meta({ description: "one per stream (`/v1/stream/*`) of the stream, in order" }),
    warnings: z.array(ImportWarning).meta({
      description:
        "what the stream says that does not add up: an end line counting other sessions than the stream holds, lines after an end line (imported all the same)",
    }),
  })
  .meta({ id: "TenantImportReport" });
export type TenantImportReport = z.infer<typeof TenantImportReport>;

/**
 * Where an import writes: sessions made empty from a header, listed once complete; and streams,
 * where the store keeps them.
 */
export interface TenantImportTarget extends Partial<StreamBackupTarget> {
  /** An empty session with this header, not listed yet; `already_exists` when the id is taken. */
  begin(header: ImportHeader): Promise<SessionStorage>;
  /** Lists a session whose entries are all written. */
  finish(storage: SessionStorage): Promise<void>;
}

/**
 * One session of an import, written in the background while the stream is read on: its batches
 * go out in order, one after the other, and the first failure stops them.
 */
class SessionWrite {
  readonly id: string;
  readonly slot: number;
  batch: SessionEntry[] = [];
  lines: number[] = [];
  chars = 0;
  written = 0;
  /** Batches handed to `chain` and not written yet. */
  queued = 0;
  storage: SessionStorage | undefined;
  /** Set when the id was taken: the session is left as it is. */
  taken: SessionError | undefined;
  /** Set when the session was deleted while it was exported: nothing of it is kept. */
  deleted: { line: number } | undefined;
  failure: { error: unknown; line?: number } | undefined;
  /** The session's writes, in order. */
  chain: Promise<void>;

  constructor(id: string, slot: number, begin: Promise<SessionStorage>) {
    this.id = id;
    this.slot = slot;
    this.chain = begin.then(
      (storage) => {
        this.storage = storage;
      },
      (error) => {
        if (error instanceof SessionError && error.code === "already_exists") this.taken = error;
        else this.failure = { error };
      },
    );
  }

  get stopped(): boolean {
    return this.taken !== undefined || this.failure !== undefined || this.deleted !== undefined;
  }

  fail(error: unknown, line?: number): void {
    this.failure ??= line === undefined ? { error } : { error, line };
  }

  /** Fails the session when its line at `line` holds what JSON text cannot hold as sent; says whether it did. */
  refuses(record: Record<string, unknown>, line: number): boolean {
    const problem = parsedJsonProblem(record);
    if (problem !== undefined) this.fail(lineError(line, problem), line);
    return problem !== undefined;
  }

  /** The export says the session was deleted while it was sent (its error line is at `line`). */
  deletedWhileExported(line: number): void {
    this.deleted ??= { line };
  }

  /** Sends the batch read so far after the batches before it. */
  flush(): void {
    if (this.batch.length === 0) return;
    const batch = this.batch;
    const lines = this.lines;
    this.batch = [];
    this.lines = [];
    this.chars = 0;
    this.queued++;
    this.chain = this.chain.then(async () => {
      this.queued--;
      if (this.stopped || !this.storage) return;
      try {
        await this.storage.importEntries(batch);
        this.written += batch.length;
      } catch (error) {
        this.fail(error, error instanceof SessionError ? lineOfBatchError(error, lines) : undefined);
      }
    });
  }
}

/**
 * The opening, cursor and end lines of tenant streams read one after another, checked: an end line
 * counting other sessions than its stream completed, and lines after an end line, are warnings
 * (`what` names the stream in them: "the stream", "the file").
 */
export class StreamEnds {
  /** Sessions and streams completed (a cursor line after them) since the stream's opening line. */
  #completed = { sessions: 0, streams: 0 };
  /** What the lines being read belong to: a session's, or a stream's (after its header line). */
  #in: "sessions" | "streams" = "sessions";
  /** The line of the stream's end line, once one was read. */
  #endedAt: number | undefined;
  /** Whether the lines read are a tenant export's: after its export line, before its end line. */
  #within = false;

  constructor(
    private readonly what: string,
    readonly warnings: ImportWarning[] = [],
  ) {}

  /**
   * Whether the lines read so far are a tenant export's (after its export line, before its end
   * line): there a session or a stream is whole once its cursor line follows it. What follows an
   * end line is read as it is, as native exports one after another are.
   */
  get within(): boolean {
    return this.#within;
  }

  /**
   * Reads the line at `line` of `type` (undefined for a line of a session); `end` is the end line
   * itself, whose `sessions` (and `streams`, when it counts them) are checked.
   */
  read(line: number, type: unknown, end?: unknown): void {
    if (type === "export") {
      this.#completed = { sessions: 0, streams: 0 };
      this.#endedAt = undefined;
      this.#within = true;
      return;
    }
    if (this.#endedAt !== undefined) {
      // Nothing follows an end line but another stream (exports one after another).
      const message = `${this.what} goes on after its end line (line ${this.#endedAt}): what follows is imported as it is`;
      this.warnings.push({ line, message });
      this.#endedAt = undefined;
    }
    if (type === "session") this.#in = "sessions";
    if (type === "stream") this.#in = "streams";
    if (type === "cursor") this.#completed[this.#in]++;
    if (type !== "end") return;
    this.#endedAt = line;
    this.#within = false;
    const counts = isRecord(end) ? end : {};
    for (const what of ["sessions", "streams"] as const) {
      // An end line without `streams` is of an export that has none.
      if (what === "streams" && counts.streams === undefined && this.#completed.streams === 0) continue;
      if (counts[what] === this.#completed[what]) continue;
      const message = `the end line counts ${JSON.stringify(counts[what])} ${what}; ${this.what} holds ${this.#completed[what]} complete ones`;
      this.warnings.push({ line, message });
    }
  }
}

/** Sessions an import writes at once (each one's batches stay in order). */
const IMPORT_PARALLEL = 4;
/** Batches of one session read ahead of its writes. */
const IMPORT_READ_AHEAD = 2;

/**
 * Writes the sessions of a tenant stream (or of native exports one after another), each on its
 * own: a session that fails is deleted and reported, and the import goes on with the next. A few
 * sessions are written at once, each holding at most a few batches, whatever the stream's size.
 */
export async function importTenant(
  lines: AsyncIterable<NumberedLine>,
  target: TenantImportTarget,
  options: { existing?: ExistingSessions } = {},
): Promise<TenantImportReport> {
  const existing = options.existing ?? "skip";
  const sessions: ImportedSessionStatus[] = [];
  const running = new Set<Promise<void>>();
  let current: SessionWrite | undefined;
  /** After a header that could not be read: the lines of its session are passed over. */
  let passing = false;
  let first = true;
  const ends = new StreamEnds("the stream");
  const streams = new StreamImports(target, existing);

  /**
   * Fails what is being written when, in a tenant export (`inExport`), something other than its
   * cursor line follows it (the next session, the end, the end of the input): the export was cut
   * short there, as one that stopped midway and was resumed into another file is.
   */
  const cutShort = (inExport: boolean, line: number | undefined): void => {
    if (!inExport) return;
    const error = (what: string) =>
      new SessionError(
        "invalid_request",
        `the export was cut short in this ${what}: no cursor line follows it (import the whole export, or the export resumed after its last cursor line)`,
      );
    if (current && !current.stopped) current.fail(error("session"), line);
    if (streams.open) streams.fail(error("stream"), line ?? 0);
  };

  /** The outcome of a session once its writes are done: listed, or deleted and reported. */
  const settle = async (write: SessionWrite): Promise<void> => {
    await write.chain;
    const { id, slot, storage, taken, failure, deleted } = write;
    if (taken) {
      sessions[slot] =
        existing === "skip"
          ? { id, status: "skipped" }
          : { id, status: "refused", error: { code: taken.code, message: taken.message } };
      return;
    }
    if (deleted && !failure) {
      await storage?.delete().catch(() => undefined);
      const message = "deleted while it was exported: it is not in the tenant any more";
      sessions[slot] = { id, status: "skipped", error: { code: "not_found", message, line: deleted.line } };
      return;
    }
    if (!failure && storage) {
      try {
        await target.finish(storage);
        sessions[slot] = { id, status: "imported", entries: write.written };
        return;
      } catch (error) {
        write.fail(error);
      }
    }
    await storage?.delete().catch(() => undefined);
    const reason = write.failure ?? { error: undefined };
    const body = errorBody(reason.error, "the session could not be written");
    sessions[slot] = {
      id,
      status: "failed",
      error: reason.line === undefined ? body : { ...body, line: reason.line },
    };
  };

  const close = async (): Promise<void> => {
    const write = current;
    current = undefined;
    if (!write) return;
    write.flush();
    const done = settle(write).finally(() => running.delete(done));
    running.add(done);
    if (running.size >= IMPORT_PARALLEL) await Promise.race(running);
  };

  /** A session whose header is missing or unreadable: reported, and its lines passed over. */
  const unreadable = (error: { code: string; message: string }, line: number): void => {
    sessions.push({ id: null, status: "failed", error: { ...error, line } });
    passing = true;
  };

  const open = async (numbered: NumberedLine): Promise<void> => {
    await close();
    let header: ImportHeader;
    try {
      header = parseNativeHeader(numbered);
    } catch (error) {
      unreadable(errorBody(error, ""), numbered.line);
      return;
    }
    passing = false;
    const slot = sessions.push({ id: header.id, status: "failed" }) - 1;
    current = new SessionWrite(header.id, slot, target.begin(header));
  };

  const readAll = async (): Promise<void> => {
    for await (const numbered of lines) {
      const value = tryParseJson(numbered.text);
      const record = isRecord(value) ? value : undefined;
      const type = record?.type;
      if (first) {
        first = false;
        const opensExport =
          type === "export" && record?.format === TENANT_FORMAT && record.version === TENANT_VERSION;
        if (type !== "session" && type !== "stream" && !opensExport) {
          throw lineError(
            numbered.line,
            `not a ${TENANT_FORMAT} stream: expected {"type":"export","format":"${TENANT_FORMAT}","version":${TENANT_VERSION}} or a session header`,
          );
        }
      }
      // Whether the lines before this one are a tenant export's.
      const inExport = ends.within;
      ends.read(numbered.line, type, record);
      if (type === "stream") {
        cutShort(inExport, numbered.line);
        await close();
        await streams.close();
        await streams.begin(record, numbered.line);
      } else if (type === "session" && record?.format === NATIVE_FORMAT) {
        cutShort(inExport, numbered.line);
        await streams.close();
        await open(numbered);
      } else if (type === "cursor" || type === "export" || type === "end") {
        if (type !== "cursor") cutShort(inExport, numbered.line);
        await close();
        await streams.close();
      } else if (streams.open) {
        const error = record?.error as { message?: unknown } | undefined;
        if (type !== "error") await streams.line(record, numbered.line);
        else {
          const reason = typeof error?.message === "string" ? error.message : "an error";
          streams.fail(
            new SessionError("invalid_request", `the export of this stream was cut short: ${reason}`),
            numbered.line,
          );
          await streams.close();
        }
      } else if (type === "error") {
        // The exporter could not read the rest of this session: what came of it is not kept. One
        // deleted while it was sent is not in the tenant any more: skipped, as the export leaves
        // out one deleted before.
        const error = record?.error as { code?: unknown; message?: unknown } | undefined;
        const reason = typeof error?.message === "string" ? error.message : "an error";
        if (error?.code === "not_found") current?.deletedWhileExported(numbered.line);
        else
          current?.fail(
            new SessionError("invalid_request", `the export of this session was cut short: ${reason}`),
            numbered.line,
          );
        await close();
        passing = true;
      } else if (passing) {
        // A line of a session already reported.
      } else if (!current) {
        const message = "an entry outside any session (its header is missing)";
        unreadable({ code: "invalid_request", message }, numbered.line);
      } else if (current.stopped) {
        // The session failed or was taken: the rest of its lines are not needed.
      } else if (!record) {
        current.fail(lineError(numbered.line, "not a JSON object (truncated or malformed)"), numbered.line);
      } else if (current.refuses(record, numbered.line)) {
        // Failed for what the line holds.
      } else {
        current.batch.push(record as unknown as SessionEntry);
        current.lines.push(numbered.line);
        current.chars += numbered.text.length;
        if (current.batch.length >= IMPORT_BATCH || current.chars >= IMPORT_BATCH_CHARS) {
          current.flush();
          if (current.queued > IMPORT_READ_AHEAD) await current.chain;
        }
      }
    }
    cutShort(ends.within, undefined);
    await close();
    await streams.close();
  };

  try {
    await readAll();
  } catch (error) {
    // The stream itself broke (unreadable, too large): the session or stream it was in is not kept.
    current?.fail(error);
    await close();
    streams.fail(error, 0);
    await streams.close();
    await Promise.all(running);
    throw error;
  }
  await Promise.all(running);
  const counts = { imported: 0, skipped: 0, refused: 0, failed: 0 };
  for (const { status } of sessions) counts[status]++;
  return { ...counts, sessions, streams: streams.statuses, warnings: ends.warnings };
}
