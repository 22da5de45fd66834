import type { SessionError } from "../../core/errors";
import { ERROR_STATUS } from "../../core/errors";
import { dispositionFor, SERVED_BYTES_HEADERS } from "../served-bytes";
import type { Position } from "./offsets";
import { formatOffset } from "./offsets";
import { HEADER } from "./protocol";
import type { StreamState } from "./store";

/*
 * The answers a stream gives. Every one carries the protocol's browser safety headers: no MIME
 * sniffing, and no embedding by pages of other origins (a page's `<script src>` to a local server
 * would otherwise read a stream as the dev tenant); and, as for every byte a tenant wrote, the
 * sandbox a browser opening it directly runs nothing in, a document type being a download.
 */

export const SAFETY_HEADERS: Readonly<Record<string, string>> = {
  ...SERVED_BYTES_HEADERS,
  "Cross-Origin-Resource-Policy": "same-origin",
};

export function answer(
  status: number,
  headers: Record<string, string>,
  body: BodyInit | null = null,
): Response {
  return new Response(body, { status, headers: { ...SAFETY_HEADERS, ...headers } });
}

/** Where the stream's tail is, and whether it is closed. */
export function tailHeaders(stream: StreamState, tail: Position = stream.tail): Record<string, string> {
  return { [HEADER.nextOffset]: formatOffset(tail), ...(stream.closed ? { [HEADER.closed]: "true" } : {}) };
}

/** What a stream's data is: its content type, a download when a browser would run it as a page. */
export function contentHeaders(stream: StreamState): Record<string, string> {
  return { "Content-Type": stream.contentType, ...dispositionFor(stream.contentType) };
}

/** A stream's metadata: its content type, where it ends, how it expires. */
export function metadataHeaders(stream: StreamState): Record<string, string> {
  const { ttlSeconds, expiresAt } = stream.expiry;
  return {
    ...contentHeaders(stream),
    ...tailHeaders(stream),
    ...(ttlSeconds === null ? {} : { [HEADER.ttl]: String(ttlSeconds) }),
    ...(expiresAt === null ? {} : { [HEADER.expiresAt]: new Date(expiresAt).toISOString() }),
  };
}

/** Headers the protocol asks for beside some errors, read from the error's details. */
function errorHeaders(error: SessionError): Record<string, string> {
  const details = (error.details ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = {};
  if (error.code === "stream_closed") {
    headers[HEADER.closed] = "true";
    if (typeof details.nextOffset === "string") headers[HEADER.nextOffset] = details.nextOffset;
  }
  if (error.code === "stale_epoch" && typeof details.currentEpoch === "number") {
    headers[HEADER.producerEpoch] = String(details.currentEpoch);
  }
  if (error.code === "sequence_conflict" && typeof details.expectedSeq === "number") {
    headers[HEADER.producerExpectedSeq] = String(details.expectedSeq);
    headers[HEADER.producerReceivedSeq] = String(details.receivedSeq);
  }
  return headers;
}

/** The service's error envelope, with the protocol's headers where it asks for them. */
export function errorAnswer(error: SessionError, requestId: string | null): Response {
  const body = { error: { ...error.toJSON(), ...(requestId ? { requestId } : {}) } };
  return answer(
    ERROR_STATUS[error.code],
    { "Content-Type": "application/json", ...errorHeaders(error) },
    JSON.stringify(body),
  );
}
