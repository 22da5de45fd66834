import { SessionError } from "../../core/errors";
import { answer, metadataHeaders } from "./answers";
import type { AppendHook } from "./append-hook";
import { recordBytes } from "./blocks";
import { readBody } from "./body";
import type { StreamContext } from "./context";
import { jsonMessages } from "./json-messages";
import type { CreateRequest } from "./protocol";
import { DEFAULT_CONTENT_TYPE, isJsonType, MAX_APPEND_BYTES, mediaType, readCreateRequest } from "./protocol";
import type { StreamState } from "./store";

/*
 * PUT: create a stream, or confirm one that exists with the same configuration (content type,
 * expiry, closed or not, and what it was forked from). A fork is counted by its source before it
 * is made, and the count is given back if making it fails, whenever that is learned
 * (`StreamContext.beginFork`).
 */

/** The records of an initial body or an append: one for bytes, one per message for JSON. */
export function recordsOf(contentType: string, body: Uint8Array): Uint8Array[] {
  if (body.byteLength === 0) return [];
  return isJsonType(contentType) ? jsonMessages(body) : [body];
}

function sameConfiguration(context: StreamContext, stream: StreamState, request: CreateRequest): boolean {
  const fork = request.fork;
  // A fork that names no content type takes its source's; a plain stream's default is bytes.
  const contentType = request.contentType ?? (fork ? null : DEFAULT_CONTENT_TYPE);
  if (contentType !== null && mediaType(contentType) !== mediaType(stream.contentType)) return false;
  if (request.closed !== stream.closed) return false;
  if ((fork === null) !== (stream.fork === null)) return false;
  const { ttlSeconds, expiresAt } = request.expiry;
  if (fork && stream.fork) {
    if (context.sources.keyOf(fork.source) !== stream.fork.source) return false;
    if (fork.offset !== null && fork.offset !== stream.fork.offset) return false;
    if (fork.subOffset !== stream.fork.subOffset) return false;
    // A fork that sets no expiry inherited its source's.
    if (ttlSeconds === null && expiresAt === null) return true;
  }
  return ttlSeconds === stream.expiry.ttlSeconds && expiresAt === stream.expiry.expiresAt;
}

/** The answer to a create that finds the stream already there. */
function existing(context: StreamContext, stream: StreamState, request: CreateRequest): Response {
  if (stream.deleted) {
    throw new SessionError("stream_deleted", "a deleted stream still read by its forks holds this path");
  }
  if (!sameConfiguration(context, stream, request)) {
    throw new SessionError("already_exists", "a stream with another configuration is at this path", {
      contentType: stream.contentType,
      ttlSeconds: stream.expiry.ttlSeconds,
      expiresAt: stream.expiry.expiresAt === null ? null : new Date(stream.expiry.expiresAt).toISOString(),
      closed: stream.closed,
      forked: stream.fork !== null,
    });
  }
  return answer(200, metadataHeaders(stream));
}

function created(request: Request, stream: StreamState): Response {
  const url = new URL(request.url);
  return answer(201, { ...metadataHeaders(stream), Location: `${url.origin}${url.pathname}` });
}

export async function createStream(
  context: StreamContext,
  request: Request,
  key: string,
  hook?: AppendHook,
): Promise<Response> {
  const input = readCreateRequest(request.headers, context.now());
  const body = await readBody(request, MAX_APPEND_BYTES);
  const found = await context.current(key);
  if (found) return existing(context, found, input);
  if (input.fork) return createFork(context, request, key, input, body, hook);
  // A body that is refused asks no room.
  const contentType = input.contentType ?? DEFAULT_CONTENT_TYPE;
  const records = recordsOf(contentType, body);
  await hook?.reserve?.(body.byteLength);
  // Another create of this path may have finished while room was asked for.
  const raced = context.store.get(key);
  if (raced) return existing(context, raced, input);
  const stream = context.transact(() => {
    const made = context.store.create(
      key,
      { contentType, expiry: input.expiry, closed: input.closed, fork: null, now: context.now() },
      records.length > 0 ? [records] : [],
    );
    hook?.appended(recordBytes(records));
    return made;
  }, hook?.held);
  context.scheduleAlarm();
  return created(request, stream);
}

async function createFork(
  context: StreamContext,
  request: Request,
  key: string,
  input: CreateRequest,
  body: Uint8Array,
  hook: AppendHook | undefined,
): Promise<Response> {
  const fork = input.fork as NonNullable<CreateRequest["fork"]>;
  const source = context.sources.keyOf(fork.source);
  const token = await context.beginFork(source);
  try {
    const point = await context.sources
      .forkPoint(source, {
        offset: fork.offset,
        subOffset: fork.subOffset,
        contentType: input.contentType,
        token,
      })
      .catch((error: unknown) => {
        // The source's own refusal: it counted nothing, so there is nothing to give back.
        if (error instanceof SessionError) context.transact(() => context.store.dropRelease(token));
        throw error;
      });
    const records = recordsOf(point.contentType, body);
    // The part of an append a fork cuts is its own first record: room for it is asked with the body's.
    const own = recordBytes(point.materialized);
    await hook?.reserve?.(own + body.byteLength);
    // Another create of this path may have finished while the source and the host were asked.
    const raced = context.store.get(key);
    if (raced) return existing(context, raced, input);
    const inheritsExpiry = input.expiry.ttlSeconds === null && input.expiry.expiresAt === null;
    const stream = context.transact(() => {
      const made = context.store.create(
        key,
        {
          contentType: point.contentType,
          expiry: inheritsExpiry ? point.expiry : input.expiry,
          closed: input.closed,
          fork: {
            source,
            offset: point.offset,
            subOffset: fork.subOffset,
            inherited: point.inherited,
            depth: point.depth,
            token,
          },
          now: context.now(),
        },
        [point.materialized, records].filter((batch) => batch.length > 0),
      );
      context.store.dropRelease(token);
      hook?.appended(own + recordBytes(records));
      return made;
    }, hook?.held);
    context.scheduleAlarm();
    return created(request, stream);
  } finally {
    await context.endFork(token);
  }
}
