import type { OpenAPIHono } from "@hono/zod-openapi";
import * as z from "zod";
import { LATEST_EXPIRES_AT } from "../../core/limits";
import { MAX_APPEND_BYTES } from "../../durable/internal";
import type { AppEnv } from "../env";
import { conflict, errors, failure } from "../route-kit";

/*
 * The stream routes in the OpenAPI document. The protocol is headers and raw bodies, so these
 * describe what the object behind the route checks (src/durable/stream/protocol.ts); the route
 * itself only forwards. docs/streams.md has the whole of it.
 */

const PATH = "/v1/stream/{path}";

const StreamPath = z.object({
  path: z.string().meta({ description: "the stream's path under /v1/stream/; it may hold slashes" }),
});

const header = (description: string) => ({ schema: { type: "string" as const }, description });

const TAIL = {
  "Stream-Next-Offset": header("the offset after the stream's last data"),
  "Stream-Closed": header("true when the stream is closed"),
};

const body = (description: string) => ({
  content: { "*/*": { schema: z.string().meta({ format: "binary" }) } },
  description,
});

const streamConflict = conflict(
  "stream_closed, content_type_mismatch, sequence_conflict, already_exists or stream_deleted",
);
const gone = failure("gone: the stream was deleted and is kept only for its forks");
const tooLarge = failure(`payload_too_large: more than ${MAX_APPEND_BYTES} bytes`);

/** A header or query field: optional text, described. */
const text = (description: string) => z.string().optional().meta({ description });

const CreateHeaders = z.object({
  "content-type": text("fixed for the stream's life (default bytes)"),
  "stream-ttl": text(
    `seconds without a read or write before it expires (ending before ${LATEST_EXPIRES_AT})`,
  ),
  "stream-expires-at": text(`RFC 3339 time it expires, before ${LATEST_EXPIRES_AT} (not with a TTL)`),
  "stream-closed": text("true: created closed, the body its whole content"),
  "stream-forked-from": text("/v1/stream/… path of the stream to fork"),
  "stream-fork-offset": text("where to fork (default: the source's tail)"),
  "stream-fork-sub-offset": text("bytes or messages into that append"),
});

const AppendHeaders = z.object({
  "content-type": text("the stream's content type (needed with a body)"),
  "stream-closed": text("true: close the stream (after this body)"),
  "stream-seq": text("must sort above the last one appended"),
  "producer-id": text("exactly-once appends: the writer's name"),
  "producer-epoch": text("raised when the writer restarts"),
  "producer-seq": text("0, 1, 2… per epoch"),
});

const ReadQuery = z.object({
  offset: text("-1 (the start, default), now (the tail), or an offset"),
  live: z.enum(["long-poll", "sse"]).optional().meta({ description: "wait for data, or follow as SSE" }),
  cursor: text("the Stream-Cursor of the answer before"),
});

/** Registers the five operations of a stream. */
export function describeStreams(registry: OpenAPIHono<AppEnv>["openAPIRegistry"]): void {
  registry.registerPath({
    method: "put",
    path: PATH,
    operationId: "createStream",
    summary: "Create a stream (or confirm one with the same configuration)",
    description:
      "The Durable Streams protocol's create, a fork with Stream-Forked-From. See docs/streams.md.",
    request: { params: StreamPath, headers: CreateHeaders, body: body("the stream's first data, if any") },
    responses: {
      201: { description: "created", headers: { ...TAIL, Location: header("the stream's URL") } },
      200: { description: "already there, configured the same", headers: TAIL },
      ...errors,
      409: streamConflict,
      413: tooLarge,
    },
  });
  registry.registerPath({
    method: "post",
    path: PATH,
    operationId: "appendToStream",
    summary: "Append to a stream, close it, or both",
    request: {
      params: StreamPath,
      headers: AppendHeaders,
      body: body("the data (JSON streams: a value or an array)"),
    },
    responses: {
      200: { description: "appended (with producer headers)", headers: TAIL },
      204: { description: "appended or closed; a producer's duplicate", headers: TAIL },
      ...errors,
      403: failure("forbidden (a read-only key), or stale_epoch: the producer was fenced off"),
      409: streamConflict,
      410: gone,
      413: tooLarge,
    },
  });
  registry.registerPath({
    method: "get",
    path: PATH,
    operationId: "readStream",
    summary: "Read a stream from an offset: a page, a long-poll, or Server-Sent Events",
    request: { params: StreamPath, query: ReadQuery },
    responses: {
      200: {
        description: "data (a page of at most 4 MiB), or an SSE stream of data and control events",
        headers: { ...TAIL, "Stream-Up-To-Date": header("true when the answer reaches the tail") },
        content: { "*/*": { schema: z.string() }, "text/event-stream": { schema: z.string() } },
      },
      204: { description: "a long-poll that saw no new data", headers: TAIL },
      304: { description: "the same page as the ETag given in If-None-Match" },
      ...errors,
      410: gone,
    },
  });
  registry.registerPath({
    method: "head",
    path: PATH,
    operationId: "streamMetadata",
    summary: "The content type, tail and expiry of a stream, and whether it is closed",
    request: { params: StreamPath },
    responses: { 200: { description: "the stream exists", headers: TAIL }, ...errors, 410: gone },
  });
  registry.registerPath({
    method: "delete",
    path: PATH,
    operationId: "deleteStream",
    summary: "Delete a stream (kept, answering 410, while forks read it)",
    request: { params: StreamPath },
    responses: { 204: { description: "deleted" }, ...errors, 410: gone },
  });
}
