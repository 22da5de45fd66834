import * as z from "zod";
import type { ContextSettings } from "./context";
import { SessionContext } from "./context";

/*
 * A context as the service answers it: whole, with its version (`reset` when `since` was asked and
 * the context did not just grow), or what was appended since an earlier version. Described here
 * once, for the object that writes it, the OpenAPI document and the client that reads it.
 */

const Version = z.string().meta({ description: "the context's version (also its ETag)" });

/** A whole context, with its version; `reset` when `since` was asked and the context did not just grow. */
export const FullContext = SessionContext.extend({
  version: Version,
  reset: z.literal(true).optional(),
}).meta({ id: "FullContext" });
export type FullContext = z.infer<typeof FullContext>;

/** What was appended to the context since the version `since`, and its settings now. */
export const ContextDelta = SessionContext.omit({ messages: true })
  .extend({ version: Version, since: z.string(), append: SessionContext.shape.messages })
  .meta({ id: "ContextDelta" });
export type ContextDelta = z.infer<typeof ContextDelta>;

export type ContextAnswer = FullContext | ContextDelta;

/**
 * A context's version: which life of the session it is (a deleted and re-created session starts
 * over), its leaf, the compaction it starts from, and its system prompt. Two versions of one life
 * with the same compaction and prompt, one leaf above the other, are one context grown.
 */
export interface ContextVersion {
  life: string;
  leafSeq: number;
  compactionSeq: number;
  prompt: string;
}

/** A 32-bit FNV-1a hash, in hex: enough to tell that a system prompt changed. */
export function fingerprint(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

export function formatContextVersion(version: ContextVersion): string {
  return `${version.life}-${version.leafSeq}-${version.compactionSeq}-${version.prompt}`;
}

export function parseContextVersion(text: string): ContextVersion | undefined {
  const match = /^([0-9a-f]{8})-(\d{1,15})-(\d{1,15})-([0-9a-f]{8})$/.exec(text);
  if (!match) return undefined;
  return {
    life: match[1] as string,
    leafSeq: Number(match[2]),
    compactionSeq: Number(match[3]),
    prompt: match[4] as string,
  };
}

/**
 * The JSON of a context answer up to its messages (`messages` of a whole one, `append` of a
 * delta): `{"systemPrompt":…,…,"<key>":`, for `jsonArray` to follow with them.
 */
export function contextHead(
  systemPrompt: string,
  settings: ContextSettings,
  extra: Record<string, unknown>,
  key: "messages" | "append",
): string {
  const head = JSON.stringify({ systemPrompt, ...settings, ...extra });
  return `${head.slice(0, -1)},"${key}":`;
}

/** `open`, the JSON values of `pages` (each already written) as one array, then `close`. */
export async function* jsonArray(
  open: string,
  pages: Iterable<readonly string[]> | AsyncIterable<readonly string[]>,
  close: string,
): AsyncGenerator<string> {
  yield `${open}[`;
  let first = true;
  for await (const page of pages) {
    if (page.length === 0) continue;
    yield `${first ? "" : ","}${page.join(",")}`;
    first = false;
  }
  yield `]${close}`;
}

/**
 * Characters a stream's chunk gathers from small parts: a chunk per line of a million-line export
 * would cost more in passing chunks along than in making them.
 */
const CHUNK_CHARS = 64 * 1024;

/**
 * Text parts as bytes, made only when the reader asks (small parts gathered into chunks of about
 * CHUNK_CHARS); `done` hears the bytes sent.
 */
export function textStream(
  parts: Iterable<string> | AsyncIterable<string>,
  done: (bytes: number) => unknown = () => undefined,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const iterator = Symbol.asyncIterator in parts ? parts[Symbol.asyncIterator]() : parts[Symbol.iterator]();
  let bytes = 0;
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, text: string) => {
    const chunk = encoder.encode(text);
    bytes += chunk.byteLength;
    controller.enqueue(chunk);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let text = "";
      while (text.length < CHUNK_CHARS) {
        const next = await iterator.next();
        if (next.done) {
          if (text) send(controller, text);
          controller.close();
          done(bytes);
          return;
        }
        text += next.value;
      }
      send(controller, text);
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}
