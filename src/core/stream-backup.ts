import * as z from "zod";
import { SessionError } from "./errors";

/*
 * A tenant's streams (`/v1/stream/*`) in its backup (tenant-stream.ts): after its sessions, each
 * stream as a header line, one line per append in order, and a cursor line once it is whole:
 *
 *   {"type":"stream","path":"chat/42","contentType":"text/plain","ttlSeconds":null,"expiresAt":null,"closed":true}
 *   {"type":"stream_append","base64":"SGVsbG8s"}             ← a binary append's bytes
 *   {"type":"stream_append","json":"{\"n\":1},{\"n\":2}"}      ← a JSON append's messages, as written
 *   {"type":"cursor","cursor":"…"}
 *
 * Imported, a stream is made again with the same appends, so it has the same offsets and a reader
 * resumes where it stood. Its producers' sequences and `Stream-Seq` start anew, and a fork comes
 * back as a stream of its own holding what it read from its source.
 */

/** The longest path a stream may have. */
export const MAX_STREAM_PATH_CHARS = 1024;
/** The longest content type a stream may have, in characters. */
export const MAX_STREAM_CONTENT_TYPE_CHARS = 256;

export const StreamHeaderLine = z
  .object({
    type: z.literal("stream"),
    path: z.string().min(1).max(MAX_STREAM_PATH_CHARS),
    contentType: z.string().min(1).max(MAX_STREAM_CONTENT_TYPE_CHARS),
    ttlSeconds: z.number().int().positive().nullable(),
    expiresAt: z.iso.datetime({ offset: true }).nullable(),
    closed: z.boolean(),
  })
  .strict();
export type StreamHeader = Omit<z.infer<typeof StreamHeaderLine>, "type">;

export const StreamAppendLine = z.union([
  z.object({ type: z.literal("stream_append"), base64: z.base64() }).strict(),
  z.object({ type: z.literal("stream_append"), json: z.string() }).strict(),
]);
/** One append: a binary stream's bytes (base64), or a JSON stream's messages joined by commas. */
export type StreamAppend = { base64: string } | { json: string };

/** A stream of the tenant, and a way to read its appends, a few at a time. */
export interface StreamExport {
  header: StreamHeader;
  appends(): AsyncIterable<StreamAppend>;
}

/** Where a tenant's export reads its streams. */
export interface StreamBackupSource {
  /** The tenant's streams whose path sorts after `after`, in path order. */
  streams(after: string | null): AsyncIterable<StreamExport>;
}

/** A stream an import writes: made empty and open, its appends, then closed if it was. */
export interface StreamImportWrite {
  append(append: StreamAppend): Promise<void>;
  /** The stream is whole: closed now when its header says it was. */
  finish(): Promise<void>;
  /** Removes what was written of it. */
  abandon(): Promise<void>;
}

/** Where a tenant's import writes its streams. */
export interface StreamBackupTarget {
  /** Makes the stream; `already_exists` when its path is taken. */
  beginStream(header: StreamHeader): Promise<StreamImportWrite>;
}

export const ImportedStreamStatus = z
  .object({
    path: z.string().nullable().meta({ description: "null when the header line could not be read" }),
    status: z.enum(["imported", "skipped", "refused", "failed"]),
    appends: z.number().int().optional().meta({ description: "appends written, when imported" }),
    error: z
      .object({ code: z.string(), message: z.string(), line: z.number().int().optional() })
      .optional()
      .meta({ description: "why it was refused or failed; `line` is 1-based in the stream" }),
  })
  .meta({ id: "ImportedStreamStatus" });
export type ImportedStreamStatus = z.infer<typeof ImportedStreamStatus>;

/** The header line of a stream read from a backup; `invalid_request` naming what is wrong. */
export function parseStreamHeader(value: unknown): StreamHeader {
  const parsed = StreamHeaderLine.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join(".") || "the line";
    throw new SessionError(
      "invalid_request",
      `not a stream header: ${where}: ${issue?.message ?? "invalid"}`,
    );
  }
  const { type: _type, ...header } = parsed.data;
  return header;
}

/** An append line of a stream read from a backup; `invalid_request` when it is not one. */
export function parseStreamAppend(value: unknown): StreamAppend {
  const parsed = StreamAppendLine.safeParse(value);
  if (!parsed.success) {
    throw new SessionError(
      "invalid_request",
      'not a stream append: {"type":"stream_append"} with base64 or json',
    );
  }
  const { type: _type, ...append } = parsed.data;
  return append;
}

function errorOf(
  error: unknown,
  otherwise: string,
  line?: number,
): NonNullable<ImportedStreamStatus["error"]> {
  const body =
    error instanceof SessionError
      ? { code: error.code, message: error.message }
      : { code: "internal", message: otherwise };
  return line === undefined ? body : { ...body, line };
}

interface StreamImport {
  path: string;
  slot: number;
  write: StreamImportWrite | undefined;
  appends: number;
  failure: { error: unknown; line?: number } | undefined;
}

/**
 * The streams of a tenant import, written one at a time as their lines are read, each whole or
 * not at all: a stream that fails is removed and reported, and the import goes on.
 */
export class StreamImports {
  readonly statuses: ImportedStreamStatus[] = [];
  #current: StreamImport | undefined;
  readonly #target: Partial<StreamBackupTarget>;
  readonly #existing: "skip" | "refuse";

  constructor(target: Partial<StreamBackupTarget>, existing: "skip" | "refuse") {
    this.#target = target;
    this.#existing = existing;
  }

  /** Whether the lines read belong to a stream (after its header, before its cursor). */
  get open(): boolean {
    return this.#current !== undefined;
  }

  /** A stream's header line: the stream before it is closed, and this one made. */
  async begin(value: unknown, line: number): Promise<void> {
    await this.close();
    let header: StreamHeader;
    try {
      header = parseStreamHeader(value);
    } catch (error) {
      this.statuses.push({ path: null, status: "failed", error: errorOf(error, "", line) });
      return;
    }
    const slot = this.statuses.push({ path: header.path, status: "failed" }) - 1;
    const current: StreamImport = {
      path: header.path,
      slot,
      write: undefined,
      appends: 0,
      failure: undefined,
    };
    this.#current = current;
    const begin = this.#target.beginStream;
    if (!begin) {
      current.failure = { error: new SessionError("invalid_request", "this store keeps no streams"), line };
      return;
    }
    try {
      current.write = await begin(header);
    } catch (error) {
      if (error instanceof SessionError && error.code === "already_exists") {
        this.statuses[slot] =
          this.#existing === "skip"
            ? { path: header.path, status: "skipped" }
            : { path: header.path, status: "refused", error: errorOf(error, "") };
        current.failure = { error };
        current.write = undefined;
        return;
      }
      current.failure = { error, line };
    }
  }

  /** A line inside the stream: an append, or anything else (which fails the stream). */
  async line(value: unknown, line: number): Promise<void> {
    const current = this.#current;
    if (!current || current.failure || !current.write) return;
    try {
      await current.write.append(parseStreamAppend(value));
      current.appends++;
    } catch (error) {
      current.failure = { error, line };
    }
  }

  /** The export could not read the rest of this stream: what came of it is not kept. */
  fail(error: unknown, line: number): void {
    if (this.#current && !this.#current.failure) this.#current.failure = { error, line };
  }

  /** The stream's lines are over: kept when all were written, else removed and reported. */
  async close(): Promise<void> {
    const current = this.#current;
    this.#current = undefined;
    if (!current) return;
    const { path, slot, write, failure } = current;
    if (!write) {
      if (this.statuses[slot]?.status === "failed" && failure) {
        this.statuses[slot] = {
          path,
          status: "failed",
          error: errorOf(failure.error, "the stream could not be made", failure.line),
        };
      }
      return;
    }
    if (!failure) {
      try {
        await write.finish();
        this.statuses[slot] = { path, status: "imported", appends: current.appends };
        return;
      } catch (error) {
        current.failure = { error };
      }
    }
    await write.abandon().catch(() => undefined);
    const reason = current.failure ?? { error: undefined };
    this.statuses[slot] = {
      path,
      status: "failed",
      error: errorOf(reason.error, "the stream could not be written", reason.line),
    };
  }
}
