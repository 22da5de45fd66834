import { SessionError } from "../../core/errors";
import type { StreamContext } from "./context";
import { pageBytes } from "./context";
import type { Position } from "./offsets";
import { formatOffset, parseOffset, samePosition } from "./offsets";
import { MAX_FORK_DEPTH, mediaType } from "./protocol";
import type { AppendData, ForkPoint, ForkPointRequest, RecordPage } from "./sources";
import { appendsOf } from "./stream-export";

/*
 * A stream as the source of forks (PROTOCOL.md 4.2). A fork shares its source's offsets: it reads
 * the source's records before its fork point, and its own after. The source counts its forks:
 * deleted while any remain, it is kept for them (410 to everyone else) and removed with the last.
 * It counts each by the token the fork's create gave it, once, and counts each off once: a create
 * whose answer was lost, or one retried, counts no fork twice, and a release told again (or told
 * for a fork never counted) takes off no other fork's count.
 *
 * A sub-offset moves the fork point into the append that starts at the fork offset: for JSON by
 * whole messages, so the point is still between records; for bytes it cuts a record, and the fork
 * keeps the part it inherits as its own first record.
 */

export async function forkPoint(
  context: StreamContext,
  key: string,
  request: ForkPointRequest,
): Promise<ForkPoint> {
  const stream = await context.current(key);
  if (!stream) throw new SessionError("not_found", "no stream to fork at this path");
  if (stream.deleted) throw new SessionError("stream_deleted", "the stream to fork was deleted");
  if (request.contentType !== null && mediaType(request.contentType) !== mediaType(stream.contentType)) {
    throw new SessionError("content_type_mismatch", `the stream to fork is ${stream.contentType}`, {
      contentType: stream.contentType,
    });
  }
  const depth = (stream.fork?.depth ?? 0) + 1;
  if (depth > MAX_FORK_DEPTH) {
    // Each read of a fork reaches through every source before it: the chain is bounded.
    throw new SessionError(
      "invalid_request",
      `a stream may be a fork of a fork at most ${MAX_FORK_DEPTH} deep; fork an earlier one, or copy this one`,
      { maxForkDepth: MAX_FORK_DEPTH },
    );
  }
  const anchor = request.offset === null ? stream.tail : parseOffset(request.offset);
  await context.checkPosition(stream, anchor);
  let inherited: Position = anchor;
  let materialized: Uint8Array[] = [];
  if (request.subOffset > 0) {
    const past = () =>
      new SessionError(
        "invalid_request",
        "Stream-Fork-Sub-Offset reaches past the append at the fork offset",
        {
          subOffset: request.subOffset,
        },
      );
    const first = samePosition(anchor, stream.tail) ? null : await context.recordAt(stream, anchor.records);
    if (!first) throw past();
    const size = pageBytes(first);
    if (stream.json) {
      if (request.subOffset > first.batchEnd - anchor.records) throw past();
      const end = anchor.records + request.subOffset;
      const messages = await context.page(stream, anchor.records, end, Number.POSITIVE_INFINITY);
      inherited = (messages as RecordPage).end;
    } else if (request.subOffset > size) {
      throw past();
    } else if (request.subOffset === size) {
      inherited = first.end;
    } else {
      materialized = [(first.pieces[0] as Uint8Array).slice(0, request.subOffset)];
    }
  }
  // The source may have gone while its records were read.
  const current = context.store.get(key);
  if (!current || current.incarnation !== stream.incarnation)
    throw new SessionError("not_found", "no stream to fork");
  if (current.deleted) throw new SessionError("stream_deleted", "the stream to fork was deleted");
  context.transact(() => context.store.addFork(current, request.token));
  return {
    contentType: current.contentType,
    expiry: current.expiry,
    offset: formatOffset(anchor),
    inherited,
    materialized,
    depth,
  };
}

/** Records a fork inherits: `from` on, before `until` (never past the fork point). */
export async function readForFork(
  context: StreamContext,
  key: string,
  from: number,
  until: number,
  maxBytes: number,
): Promise<RecordPage | null> {
  const stream = context.store.get(key);
  if (!stream) throw new SessionError("gone", "the data this fork inherits is gone");
  const page = await context.page(stream, from, Math.min(until, stream.tail.records), maxBytes);
  // A piece is a view of a whole block: copied, only its own bytes cross RPC.
  return page && { ...page, pieces: page.pieces.map((piece) => piece.slice()) };
}

/** Appends a fork inherits: `from` on, before `until` (never past the fork point). */
export async function appendsForFork(
  context: StreamContext,
  key: string,
  from: number,
  until: number,
  maxBytes: number,
): Promise<AppendData[]> {
  const stream = context.store.get(key);
  if (!stream) throw new SessionError("gone", "the data this fork inherits is gone");
  return appendsOf(context, stream, from, Math.min(until, stream.tail.records), maxBytes);
}

/** A fork is gone: one reader fewer, and a deleted source with none left goes too. */
export async function releaseFork(context: StreamContext, key: string, token: string | null): Promise<void> {
  const stream = context.store.get(key);
  if (!stream) return;
  const remaining = context.transact(() => context.store.dropFork(stream, token));
  if (remaining === 0 && stream.deleted) await context.retire(stream);
}
