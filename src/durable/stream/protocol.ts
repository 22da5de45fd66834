import * as z from "zod";
import { zodDetails } from "../../core/append";
import { SessionError } from "../../core/errors";
import { LATEST_EXPIRES_AT } from "../../core/limits";
import { MAX_STREAM_CONTENT_TYPE_CHARS } from "../../core/stream-backup";

/*
 * The Durable Streams protocol's wire names and the rules for reading what a request carries
 * (electric-sql's PROTOCOL.md, as `@durable-streams/server-conformance-tests` 0.3 checks it).
 * Every header is checked here, before anything is read from or written to a stream.
 */

export const HEADER = {
  nextOffset: "Stream-Next-Offset",
  upToDate: "Stream-Up-To-Date",
  closed: "Stream-Closed",
  cursor: "Stream-Cursor",
  ttl: "Stream-TTL",
  expiresAt: "Stream-Expires-At",
  seq: "Stream-Seq",
  forkedFrom: "Stream-Forked-From",
  forkOffset: "Stream-Fork-Offset",
  forkSubOffset: "Stream-Fork-Sub-Offset",
  sseEncoding: "Stream-SSE-Data-Encoding",
  producerId: "Producer-Id",
  producerEpoch: "Producer-Epoch",
  producerSeq: "Producer-Seq",
  producerExpectedSeq: "Producer-Expected-Seq",
  producerReceivedSeq: "Producer-Received-Seq",
} as const;

/** Headers a browser page may send to a stream, and read from its answers (CORS). */
export const REQUEST_HEADERS = [
  "If-None-Match",
  HEADER.ttl,
  HEADER.expiresAt,
  HEADER.seq,
  HEADER.closed,
  HEADER.forkedFrom,
  HEADER.forkOffset,
  HEADER.forkSubOffset,
  HEADER.producerId,
  HEADER.producerEpoch,
  HEADER.producerSeq,
];
export const ANSWER_HEADERS = [
  "Location",
  HEADER.nextOffset,
  HEADER.upToDate,
  HEADER.closed,
  HEADER.cursor,
  HEADER.ttl,
  HEADER.expiresAt,
  HEADER.sseEncoding,
  HEADER.producerEpoch,
  HEADER.producerSeq,
  HEADER.producerExpectedSeq,
  HEADER.producerReceivedSeq,
];

export { MAX_APPEND_BYTES } from "../../core/limits";
/**
 * The most data one catch-up read answers (at least one append); the reader continues from its
 * end. It is sent block by block as it is read, so it costs the object one block of memory.
 */
export const READ_PAGE_BYTES = 4 * 1024 * 1024;
/**
 * The most data one SSE event carries (a text event cut inside a character takes in up to three
 * more appends to end on a whole one), or a read of what a fork inherits (read whole, from the
 * source's object); the reader or the next event continues from its end.
 */
export const HELD_PAGE_BYTES = 1024 * 1024;
/** How long a long-poll waits for data before it answers 204. */
export const LONG_POLL_MS = 4_000;
/** How long one SSE connection stays open; the reader reconnects from its last offset. */
export const SSE_MAX_MS = 60_000;
/** A comment line on a quiet SSE connection this often, so proxies do not drop it. */
export const SSE_KEEPALIVE_MS = 15_000;
/** The longest Stream-TTL, in seconds (about a hundred years): expiry times stay exact integers. */
export const MAX_TTL_SECONDS = 100 * 365 * 24 * 3600;
/** The longest stream path, in characters. */
export const MAX_PATH_CHARS = 1024;
/** The longest content type a create may give, in characters: as long as a backup's stream header holds. */
export const MAX_CONTENT_TYPE_CHARS = MAX_STREAM_CONTENT_TYPE_CHARS;

export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/** A content type's media type, without parameters, lower case ("" when there is none). */
export function mediaType(contentType: string | null | undefined): string {
  return contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
}

/** JSON mode: messages kept one by one, read back as one array. */
export function isJsonType(contentType: string): boolean {
  return mediaType(contentType) === "application/json";
}

/** Whether SSE carries a stream's data as text; any other stream's data goes as base64. */
export function isTextType(contentType: string): boolean {
  const type = mediaType(contentType);
  return type.startsWith("text/") || type === "application/json";
}

/** A non-negative integer in decimal, without sign, leading zeros, point or exponent. */
const PLAIN_COUNT = /^(0|[1-9][0-9]*)$/;
const count = (what: string) =>
  z
    .string()
    .regex(PLAIN_COUNT, `${what} is a non-negative integer (digits only, no leading zeros)`)
    .transform(Number)
    .refine(Number.isSafeInteger, `${what} is at most 2^53 - 1`);

/** Producer epochs and sequence numbers: non-negative integers up to 2^53 - 1. */
const producerNumber = (what: string) =>
  z
    .string()
    .regex(/^[0-9]+$/, `${what} is a non-negative integer`)
    .transform(Number)
    .refine(Number.isSafeInteger, `${what} is at most 2^53 - 1`);

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const timestamp = z
  .string()
  .regex(RFC3339, "an RFC 3339 timestamp")
  .transform((text) => Date.parse(text))
  .refine(Number.isFinite, "an RFC 3339 timestamp");

/** Only `true` (any case) means true; any other value is as if the header were absent. */
const flag = z
  .string()
  .optional()
  .transform((value) => value?.toLowerCase() === "true");

/** The headers of a create (PUT), by their lower-case names. */
const CreateHeaders = z
  .object({
    "content-type": z
      .string()
      .max(MAX_CONTENT_TYPE_CHARS, `Content-Type is at most ${MAX_CONTENT_TYPE_CHARS} characters`)
      .optional(),
    "stream-ttl": count("Stream-TTL")
      .refine((seconds) => seconds <= MAX_TTL_SECONDS, `Stream-TTL is at most ${MAX_TTL_SECONDS} seconds`)
      .optional(),
    "stream-expires-at": timestamp.optional(),
    "stream-closed": flag,
    "stream-forked-from": z.string().min(1).optional(),
    "stream-fork-offset": z.string().min(1).optional(),
    "stream-fork-sub-offset": count("Stream-Fork-Sub-Offset").optional(),
  })
  .refine((h) => h["stream-ttl"] === undefined || h["stream-expires-at"] === undefined, {
    message: "give Stream-TTL or Stream-Expires-At, not both",
  })
  .refine(
    (h) =>
      h["stream-forked-from"] !== undefined ||
      (h["stream-fork-offset"] === undefined && h["stream-fork-sub-offset"] === undefined),
    { message: "Stream-Fork-Offset and Stream-Fork-Sub-Offset need Stream-Forked-From" },
  );

/** Forks of forks a stream may stand at the end of (a fork of a stream that is no fork: 1). */
export const MAX_FORK_DEPTH = 16;

/** Characters of a Producer-Id, and of a Stream-Seq, at most: each is stored with what it wrote. */
export const MAX_PRODUCER_ID_CHARS = 256;
export const MAX_STREAM_SEQ_CHARS = 256;

const ProducerHeaders = z.object({
  "producer-id": z
    .string()
    .min(1, "Producer-Id may not be empty")
    .max(MAX_PRODUCER_ID_CHARS, `Producer-Id is at most ${MAX_PRODUCER_ID_CHARS} characters`),
  "producer-epoch": producerNumber("Producer-Epoch"),
  "producer-seq": producerNumber("Producer-Seq"),
});

/** The headers of an append (POST), by their lower-case names. */
const AppendHeaders = z.object({
  "content-type": z.string().optional(),
  "stream-closed": flag,
  "stream-seq": z
    .string()
    .min(1, "Stream-Seq may not be empty")
    .max(MAX_STREAM_SEQ_CHARS, `Stream-Seq is at most ${MAX_STREAM_SEQ_CHARS} characters`)
    .optional(),
});

/** How long a stream lives: a sliding window, or a fixed end. */
export interface Expiry {
  ttlSeconds: number | null;
  /** Milliseconds since the epoch. */
  expiresAt: number | null;
}

export interface Producer {
  id: string;
  epoch: number;
  seq: number;
}

/** The named headers that are present, by their lower-case names. */
function headerObject(headers: Headers, names: readonly string[]): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of names) {
    const value = headers.get(name);
    if (value !== null) picked[name] = value;
  }
  return picked;
}

function parsed<T>(result: z.ZodSafeParseResult<T>): T {
  if (!result.success) {
    const first = result.error.issues[0]?.message ?? "invalid headers";
    throw new SessionError("invalid_request", first, zodDetails(result.error, ["headers"]));
  }
  return result.data;
}

/**
 * The headers of a create, with an expiry at or past LATEST_EXPIRES_AT (a fixed end, or a window
 * that would end there counted from `now`) brought back to the latest one a create takes at `now`.
 * For a tenant import only: a stream a backup holds from before expiries were bounded is restored
 * rather than refused. A client's create is refused such an expiry (`readCreateRequest`).
 */
export function withinLatestExpiry(headers: Headers, now: number): Headers {
  const latest = Date.parse(LATEST_EXPIRES_AT);
  const within = new Headers(headers);
  const expiresAt = timestamp.safeParse(headers.get(HEADER.expiresAt) ?? undefined);
  if (expiresAt.success && expiresAt.data >= latest) {
    within.set(HEADER.expiresAt, new Date(latest - 1).toISOString());
  }
  const ttlSeconds = count(HEADER.ttl).safeParse(headers.get(HEADER.ttl) ?? undefined);
  if (ttlSeconds.success && now + ttlSeconds.data * 1000 >= latest) {
    within.set(HEADER.ttl, String(Math.ceil((latest - now) / 1000) - 1));
  }
  return within;
}

export type CreateRequest = ReturnType<typeof readCreateRequest>;
export type AppendRequest = ReturnType<typeof readAppendRequest>;

export function readCreateRequest(headers: Headers, now: number) {
  const h = parsed(CreateHeaders.safeParse(headerObject(headers, Object.keys(CreateHeaders.shape))));
  const expiresAt = h["stream-expires-at"] ?? null;
  if (expiresAt !== null && expiresAt <= now) {
    throw new SessionError("invalid_request", "Stream-Expires-At is in the past", {
      expiresAt: new Date(expiresAt).toISOString(),
    });
  }
  // A stream's end, as a session's, is one an alarm can be set to.
  const latest = Date.parse(LATEST_EXPIRES_AT);
  if (expiresAt !== null && expiresAt >= latest) {
    throw new SessionError("invalid_request", `Stream-Expires-At must be before ${LATEST_EXPIRES_AT}`, {
      expiresAt: new Date(expiresAt).toISOString(),
    });
  }
  const ttlSeconds = h["stream-ttl"] ?? null;
  if (ttlSeconds !== null && now + ttlSeconds * 1000 >= latest) {
    throw new SessionError("invalid_request", `Stream-TTL must end before ${LATEST_EXPIRES_AT}`, {
      ttlSeconds,
    });
  }
  // The source stream's path as the request named it, and the offset to fork at (null: its tail).
  const source = h["stream-forked-from"];
  const fork =
    source === undefined
      ? null
      : { source, offset: h["stream-fork-offset"] ?? null, subOffset: h["stream-fork-sub-offset"] ?? 0 };
  const expiry: Expiry = { ttlSeconds, expiresAt };
  return {
    contentType: h["content-type"]?.trim() || null,
    expiry,
    closed: h["stream-closed"],
    fork,
  };
}

export function readAppendRequest(headers: Headers) {
  const h = parsed(AppendHeaders.safeParse(headerObject(headers, Object.keys(AppendHeaders.shape))));
  const given = headerObject(headers, Object.keys(ProducerHeaders.shape));
  const count = Object.keys(given).length;
  if (count > 0 && count < 3) {
    throw new SessionError("invalid_request", "send Producer-Id, Producer-Epoch and Producer-Seq together", {
      given: Object.keys(given),
    });
  }
  const p = count === 3 ? parsed(ProducerHeaders.safeParse(given)) : null;
  const producer: Producer | null = p && {
    id: p["producer-id"],
    epoch: p["producer-epoch"],
    seq: p["producer-seq"],
  };
  return {
    contentType: h["content-type"]?.trim() || null,
    close: h["stream-closed"],
    streamSeq: h["stream-seq"] ?? null,
    producer,
  };
}

const LIVE_MODES: readonly string[] = ["long-poll", "sse"];

/** A read's query: one `offset` (required when live), `live` mode, the `cursor` to echo. */
export function readReadRequest(url: URL) {
  const offsets = url.searchParams.getAll("offset");
  if (offsets.length > 1) throw new SessionError("invalid_request", "give one offset", { offsets });
  const offset = offsets[0] ?? null;
  if (offset === "") throw new SessionError("invalid_request", "the offset is empty");
  const live = url.searchParams.get("live") as "long-poll" | "sse" | null;
  if (live !== null && !LIVE_MODES.includes(live)) {
    throw new SessionError("invalid_request", "live is long-poll or sse", { live });
  }
  if (live && offset === null) {
    throw new SessionError(
      "invalid_request",
      `live=${live} needs an offset (-1 for the start, now for the tail)`,
    );
  }
  return { offset, live, cursor: url.searchParams.get("cursor") };
}
