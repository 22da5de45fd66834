import { toBase64 } from "../../core/bytes";
import { SessionError } from "../../core/errors";
import { SSE_KEEP_ALIVE } from "../../core/sse";
import { answer, contentHeaders, tailHeaders } from "./answers";
import type { StreamContext } from "./context";
import { streamCursor } from "./cursor";
import type { Position } from "./offsets";
import { formatOffset, parseOffsetRequest, START } from "./offsets";
import {
  HEADER,
  HELD_PAGE_BYTES,
  isTextType,
  LONG_POLL_MS,
  READ_PAGE_BYTES,
  readReadRequest,
  SSE_KEEPALIVE_MS,
  SSE_MAX_MS,
} from "./protocol";
import type { RecordPage } from "./sources";
import type { Control } from "./sse";
import { controlEvent, dataEvent } from "./sse";
import type { PagePlan, StreamState } from "./store";
import { entityTag } from "./store";

/*
 * GET: read a stream from an offset. A catch-up read answers one page (up to READ_PAGE_BYTES) and
 * says where the next starts; a long-poll at the tail waits for data; SSE sends pages as events
 * and follows the stream live. A reader costs the object one block at a time (a catch-up page is
 * read as it is sent) or one held page (an SSE event, what a fork inherits), never the stream.
 */

/** Caches may keep a full page of history (its bytes never change); the tail is revalidated. */
const HISTORY_CACHE = "private, max-age=60, stale-while-revalidate=300";
const TAIL_CACHE = "private, no-cache";

/** An event holds a piece of the stream: a U+FEFF it starts with is the stream's, kept. */
const textDecoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const textEncoder = new TextEncoder();

/** A page as the reader gets it: the records' bytes, or for JSON one array of the messages. */
function encodePage(stream: StreamState, page: RecordPage | null): Uint8Array {
  const pieces = page?.pieces ?? [];
  const separators = stream.json ? Math.max(pieces.length - 1, 0) + 2 : 0;
  let size = separators;
  for (const piece of pieces) size += piece.byteLength;
  const bytes = new Uint8Array(size);
  let at = 0;
  if (stream.json) bytes[at++] = 0x5b; // [
  pieces.forEach((piece, i) => {
    if (stream.json && i > 0) bytes[at++] = 0x2c; // ,
    bytes.set(piece, at);
    at += piece.byteLength;
  });
  if (stream.json) bytes[at++] = 0x5d; // ]
  return bytes;
}

function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const trimmed = tag.trim();
    return trimmed === "*" || trimmed.replace(/^W\//, "") === etag;
  });
}

/**
 * Records from `from` on, read whole (an SSE event, or what a fork inherits), checked to begin
 * where the reader stands; null at `until`.
 */
async function heldPage(
  context: StreamContext,
  stream: StreamState,
  from: Position,
  until: number,
): Promise<RecordPage | null> {
  const page = await context.page(stream, from.records, until, HELD_PAGE_BYTES);
  if (page && page.start !== from.bytes)
    throw new SessionError("invalid_request", "not an offset of this stream");
  return page;
}

/**
 * Whether text ends inside a UTF-8 character: its last lead byte begins a sequence longer than
 * what follows it.
 */
function endsInsideCharacter(bytes: Uint8Array): boolean {
  for (let back = 1; back <= Math.min(4, bytes.byteLength); back++) {
    const byte = bytes[bytes.byteLength - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const length = byte >= 0xf8 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back;
  }
  return false;
}

/** How many records an SSE event of text may end before or after its page's end to end on a whole character. */
const CHARACTER_RECORDS = 3;

/**
 * An SSE event's records from `from` on: a text stream's event ends between characters, so a
 * character cut across appends reaches live readers whole, as one decoded text, with nothing held
 * back from the offset its control event gives. The last records (up to three, enough for the
 * longest character) are left for the next event until the page ends on a whole character; when
 * none can be, the next records (up to three) join it, so an event may hold that much more than a
 * held page. At the tail of an open stream, still inside a character, the event waits for the next
 * append (null). A closed stream's last bytes, or a page with no whole end near its own, go as
 * they are (a closed stream's with the records before them).
 */
async function eventPage(
  context: StreamContext,
  stream: StreamState,
  from: Position,
  text: boolean,
): Promise<{ page: RecordPage; bytes: Uint8Array } | null> {
  const page = (await heldPage(context, stream, from, stream.tail.records)) as RecordPage;
  const bytes = encodePage(stream, page);
  const atTail = page.end.records === stream.tail.records;
  if (!text || (atTail && stream.closed) || !endsInsideCharacter(bytes)) return { page, bytes };
  const shortest = Math.max(from.records + 1, page.end.records - CHARACTER_RECORDS);
  for (let until = page.end.records - 1; until >= shortest; until--) {
    const shorter = (await heldPage(context, stream, from, until)) as RecordPage;
    const shorterBytes = encodePage(stream, shorter);
    if (!endsInsideCharacter(shorterBytes)) return { page: shorter, bytes: shorterBytes };
  }
  let longer = page;
  for (let added = 0; added < CHARACTER_RECORDS && longer.end.records < stream.tail.records; added++) {
    const next = (await context.recordAt(stream, longer.end.records)) as RecordPage;
    longer = { ...longer, end: next.end, pieces: [...longer.pieces, ...next.pieces] };
    const whole = !endsInsideCharacter(lastBytes(longer.pieces));
    if (whole || longer.end.records === stream.tail.records) {
      if (!whole && !stream.closed) return null;
      return { page: longer, bytes: encodePage(stream, longer) };
    }
  }
  return atTail ? null : { page, bytes };
}

/** The last bytes of a text page's pieces, enough to tell whether it ends inside a character. */
function lastBytes(pieces: readonly Uint8Array[]): Uint8Array {
  const bytes: number[] = [];
  for (let i = pieces.length - 1; i >= 0 && bytes.length < 4; i--) {
    const piece = pieces[i] as Uint8Array;
    for (let at = piece.byteLength - 1; at >= 0 && bytes.length < 4; at--) bytes.unshift(piece[at] as number);
  }
  return Uint8Array.from(bytes);
}

/** A planned page's body, each block read as the reader takes the part before it. */
function pageBody(context: StreamContext, stream: StreamState, plan: PagePlan): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const part = plan.parts[next];
        if (!part) return controller.close();
        const data = context.present() ? context.store.blockData(stream, part.first) : undefined;
        if (!data) return controller.error(new Error("the stream went while it was read"));
        const piece = data.subarray(part.from, part.to);
        // JSON: the array's brackets around the pieces, commas between them.
        const before = stream.json ? 1 : 0;
        const after = stream.json && next === plan.parts.length - 1 ? 1 : 0;
        const bytes = new Uint8Array(before + piece.byteLength + after);
        if (before) bytes[0] = next === 0 ? 0x5b : 0x2c; // [ or ,
        bytes.set(piece, before);
        if (after) bytes[bytes.length - 1] = 0x5d; // ]
        controller.enqueue(bytes);
        next += 1;
      },
    },
    { highWaterMark: 0 },
  );
}

async function catchUp(
  context: StreamContext,
  stream: StreamState,
  from: Position,
  request: Request,
  cursor: string | null,
): Promise<Response> {
  // A page that starts in what a fork inherits is read whole (from the source's object, then the
  // fork's own records after), a held page at most; the stream's own records are planned, and
  // read as they are sent.
  const fork = stream.fork;
  let next = from;
  let body: () => BodyInit = () => encodePage(stream, null);
  if (fork && from.records < fork.inherited.records) {
    const page = await heldPage(context, stream, from, stream.tail.records);
    next = page ? page.end : from;
    body = () => encodePage(stream, page);
  } else {
    const plan = context.store.plan(stream, from.records, stream.tail.records, READ_PAGE_BYTES);
    if (plan && plan.start !== from.bytes)
      throw new SessionError("invalid_request", "not an offset of this stream");
    if (plan) {
      next = plan.end;
      body = () => pageBody(context, stream, plan);
    }
  }
  const upToDate = next.records === stream.tail.records;
  const closedAtEnd = upToDate && stream.closed;
  const etag = entityTag(stream, from, next, closedAtEnd);
  const headers: Record<string, string> = {
    [HEADER.nextOffset]: formatOffset(next),
    ...(upToDate ? { [HEADER.upToDate]: "true" } : {}),
    ...(closedAtEnd ? { [HEADER.closed]: "true" } : {}),
    ...(cursor === null ? {} : { [HEADER.cursor]: cursor }),
    ETag: etag,
    "Cache-Control": upToDate ? TAIL_CACHE : HISTORY_CACHE,
  };
  if (matches(request.headers.get("If-None-Match"), etag)) return answer(304, headers);
  return answer(200, { ...contentHeaders(stream), ...headers }, body());
}

/** `offset=now` without waiting: no data, and where the tail is. */
function atTail(stream: StreamState): Response {
  return answer(
    200,
    {
      ...contentHeaders(stream),
      ...tailHeaders(stream),
      [HEADER.upToDate]: "true",
      "Cache-Control": "no-store",
    },
    stream.json ? "[]" : null,
  );
}

/** The stream under `key`, still the one the read began on, and its host's streams still there. */
function stillThere(context: StreamContext, key: string, incarnation: string): StreamState | undefined {
  if (!context.present()) return undefined;
  const stream = context.store.get(key);
  return stream && stream.incarnation === incarnation && !stream.deleted ? stream : undefined;
}

async function longPoll(
  context: StreamContext,
  key: string,
  incarnation: string,
  from: Position,
  echoed: string | null,
  request: Request,
): Promise<Response> {
  const deadline = context.now() + LONG_POLL_MS;
  for (;;) {
    const stream = stillThere(context, key, incarnation);
    if (!stream) {
      // Kept for its forks, it is gone to its readers as to every other request.
      if (context.present() && context.store.get(key)?.deleted)
        throw new SessionError("gone", "this stream was deleted");
      throw new SessionError("not_found", "the stream was deleted");
    }
    const cursor = streamCursor(context.now(), echoed);
    if (from.records < stream.tail.records) return catchUp(context, stream, from, request, cursor);
    const waited = { ...tailHeaders(stream), [HEADER.upToDate]: "true", "Cache-Control": "no-store" };
    // A closed stream at its tail has nothing more to wait for: EOF, at once.
    if (stream.closed) return answer(204, waited);
    const remaining = deadline - context.now();
    // A reader that left is waited for no more: its wait would end at once, again and again.
    if (remaining <= 0 || request.signal.aborted) return answer(204, { ...waited, [HEADER.cursor]: cursor });
    await context.waiters.wait(incarnation, remaining, request.signal);
  }
}

/** How long an SSE connection may wait before it renews the stream's sliding expiry again. */
function renewalWait(stream: StreamState): number {
  const { ttlSeconds, expiresAt } = stream.expiry;
  return ttlSeconds === null || expiresAt !== null ? Number.POSITIVE_INFINITY : (ttlSeconds * 1000) / 2;
}

function sse(
  context: StreamContext,
  key: string,
  opening: StreamState,
  from: Position,
  echoed: string | null,
): Response {
  const { incarnation } = opening;
  const textual = isTextType(opening.contentType);
  const opened = context.now();
  const stop = new AbortController();
  let position = from;
  // Whether the last control event told the reader it is at the tail.
  let toldUpToDate = false;
  const control = (stream: StreamState, next: Position): Control => {
    const upToDate = next.records === stream.tail.records;
    const closed = upToDate && stream.closed;
    return {
      streamNextOffset: formatOffset(next),
      ...(closed ? {} : { streamCursor: streamCursor(context.now(), echoed) }),
      ...(upToDate ? { upToDate: true } : {}),
      ...(closed ? { streamClosed: true } : {}),
    };
  };
  const body = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        for (;;) {
          const stream = stillThere(context, key, incarnation);
          if (!stream) return controller.close();
          const event =
            position.records < stream.tail.records
              ? await eventPage(context, stream, position, textual && !stream.json)
              : null;
          if (stop.signal.aborted) return;
          if (event) {
            const next = event.page.end;
            const told = control(stream, next);
            const payload = textual ? textDecoder.decode(event.bytes) : toBase64(event.bytes);
            controller.enqueue(textEncoder.encode(dataEvent(payload) + controlEvent(told)));
            position = next;
            toldUpToDate = told.upToDate === true;
            if (told.streamClosed) controller.close();
            return;
          }
          if (stream.closed || !toldUpToDate) {
            const event = control(stream, position);
            controller.enqueue(textEncoder.encode(controlEvent(event)));
            toldUpToDate = true;
            if (event.streamClosed) controller.close();
            return;
          }
          // A reader following the stream keeps renewing its sliding expiry, at least twice a window.
          context.renew(stream);
          // Connections end now and then, so caches can gather readers; the reader resumes.
          const remaining = opened + SSE_MAX_MS - context.now();
          if (remaining <= 0) return controller.close();
          const changed = await context.waiters.wait(
            incarnation,
            Math.min(remaining, SSE_KEEPALIVE_MS, renewalWait(stream)),
            stop.signal,
          );
          if (stop.signal.aborted) return;
          if (!changed) {
            controller.enqueue(textEncoder.encode(SSE_KEEP_ALIVE));
            return;
          }
        }
      },
      cancel: () => stop.abort(),
    },
    { highWaterMark: 0 },
  );
  return answer(
    200,
    {
      "Content-Type": "text/event-stream",
      "Cache-Control": "no-cache",
      ...(textual ? {} : { [HEADER.sseEncoding]: "base64" }),
    },
    body,
  );
}

export async function readStream(context: StreamContext, request: Request, key: string): Promise<Response> {
  const query = readReadRequest(new URL(request.url));
  const offset = parseOffsetRequest(query.offset ?? "-1");
  const stream = await context.visible(key);
  context.renew(stream);
  if (offset.kind === "at") await context.checkPosition(stream, offset.position);
  const from = offset.kind === "start" ? START : offset.kind === "now" ? stream.tail : offset.position;
  if (query.live === "long-poll")
    return longPoll(context, key, stream.incarnation, from, query.cursor, request);
  if (query.live === "sse") return sse(context, key, stream, from, query.cursor);
  return offset.kind === "now" ? atTail(stream) : catchUp(context, stream, from, request, null);
}
