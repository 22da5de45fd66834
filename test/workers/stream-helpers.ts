import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { newId } from "../../src/core/ids";
import { SseReader } from "../../src/core/sse";
import type { StreamObject } from "../../src/durable";
import { KEY_A } from "./helpers";

/** A stream request's answer, its body read whole. */
export interface StreamAnswer {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
  text: string;
  /** The body as JSON, when it is JSON. */
  json: any;
}

export interface CallOptions {
  /** The bearer key (tenant A's by default); null: none. */
  key?: string | null;
  headers?: Record<string, string>;
  body?: BodyInit;
  signal?: AbortSignal;
}

/** The stream objects' namespace, which the tests' Worker binds. */
export function streamObjects(): DurableObjectNamespace<StreamObject> {
  if (env.STREAMS === undefined) throw new Error("the tests' Worker binds STREAMS");
  return env.STREAMS;
}

/** A stream path no other test uses. */
export function streamPath(prefix = "s"): string {
  return `/v1/stream/${prefix}-${newId()}`;
}

function requestOf(method: string, path: string, options: CallOptions): Request {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? KEY_A : options.key;
  if (key !== null) headers.Authorization = `Bearer ${key}`;
  return new Request(`http://sessions.test${path}`, {
    method,
    headers,
    body: options.body,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

export async function call(method: string, path: string, options: CallOptions = {}): Promise<StreamAnswer> {
  const res = await exports.default.fetch(requestOf(method, path, options));
  const bytes = new Uint8Array(await res.arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {}
  return { status: res.status, headers: res.headers, bytes, text, json };
}

/** The answer itself, its body unread (for live reads). */
export function open(path: string, options: CallOptions = {}): Promise<Response> {
  return exports.default.fetch(requestOf("GET", path, options));
}

/** Creates a stream (201) and answers its tail offset. */
export async function create(
  path: string,
  options: { contentType?: string; body?: BodyInit; headers?: Record<string, string>; key?: string } = {},
): Promise<string> {
  const res = await call("PUT", path, {
    key: options.key,
    body: options.body,
    headers: { "Content-Type": options.contentType ?? "text/plain", ...options.headers },
  });
  expect(res.status, res.text).toBe(201);
  return res.headers.get("Stream-Next-Offset") as string;
}

export function append(path: string, body: BodyInit, headers: Record<string, string> = {}, key?: string) {
  return call("POST", path, { key, body, headers: { "Content-Type": "text/plain", ...headers } });
}

/** The stream's tail offset (and whether it is closed), by HEAD. */
export async function head(
  path: string,
  key?: string,
): Promise<{ status: number; offset: string | null; closed: boolean }> {
  const res = await call("HEAD", path, { key });
  return {
    status: res.status,
    offset: res.headers.get("Stream-Next-Offset"),
    closed: res.headers.get("Stream-Closed") === "true",
  };
}

/** Every byte from `offset` on, page after page, and the offset after the last. */
export async function readAll(
  path: string,
  offset = "-1",
  key?: string,
): Promise<{ bytes: Uint8Array; text: string; offset: string; pages: number }> {
  const parts: Uint8Array[] = [];
  let at = offset;
  for (let pages = 1; ; pages++) {
    const res = await call("GET", `${path}?offset=${encodeURIComponent(at)}`, { key });
    expect(res.status, res.text).toBe(200);
    parts.push(res.bytes);
    at = res.headers.get("Stream-Next-Offset") as string;
    if (res.headers.get("Stream-Up-To-Date") === "true") {
      const bytes = concat(parts);
      return {
        bytes,
        text: new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes),
        offset: at,
        pages,
      };
    }
  }
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const bytes = new Uint8Array(parts.reduce((size, part) => size + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  return bytes;
}

/** Asserts the service's error envelope with its code, never a stack. */
export function expectStreamError(res: StreamAnswer, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.json?.error?.code, res.text).toBe(code);
  expect(typeof res.json.error.message).toBe("string");
  expect(res.text).not.toMatch(/\n\s+at /);
}

export interface SseEvent {
  event: string;
  data: string;
}

/** An open SSE read of a stream, event by event. */
export interface SseRead {
  response: Response;
  /** The next event; undefined once the connection ended. */
  next(timeoutMs?: number): Promise<SseEvent | undefined>;
  close(): Promise<void>;
}

export async function openSse(path: string, offset: string, key?: string): Promise<SseRead> {
  const response = await open(`${path}?offset=${encodeURIComponent(offset)}&live=sse`, { key });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const sse = new SseReader();
  const decoder = new TextDecoder();
  const buffered: SseEvent[] = [];
  let ended = false;
  return {
    response,
    async next(timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (buffered.length === 0 && !ended) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error("no event in time");
        const read = await Promise.race([
          reader.read(),
          new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), left)),
        ]);
        if (read === "timeout") throw new Error("no event in time");
        if (read.done) ended = true;
        else buffered.push(...sse.push(decoder.decode(read.value, { stream: true })));
      }
      return buffered.shift();
    },
    async close() {
      await reader.cancel().catch(() => undefined);
    },
  };
}
