import type { StoredEntry } from "../core";

/*
 * Answers built while they are sent: long paths and large entries reach the client page by page,
 * so the router never holds a whole session either. And bodies counted as they pass.
 */

/** Text parts as bytes, the next part produced only when the client reads. */
export function textStream(parts: AsyncIterable<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const iterator = parts[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

/** `items` pages as one JSON array, `open` and `close` around it. */
export async function* jsonArray<T>(
  open: string,
  pages: AsyncIterable<T[]>,
  close: string,
): AsyncGenerator<string> {
  yield `${open}[`;
  let first = true;
  for await (const page of pages) {
    if (page.length === 0) continue;
    yield `${first ? "" : ","}${page.map((item) => JSON.stringify(item)).join(",")}`;
    first = false;
  }
  yield `]${close}`;
}

/**
 * A page of `GET …/entries`: `{"entries":[…],"nextCursor":…}`. The cursor (the last seq of a full
 * page) is known once the entries have been sent, so it comes last.
 */
export async function* entriesPageJson(
  pages: AsyncIterable<StoredEntry[]>,
  limit: number,
): AsyncGenerator<string> {
  let count = 0;
  let last: number | undefined;
  async function* counted() {
    for await (const page of pages) {
      count += page.length;
      last = page[page.length - 1]?.seq ?? last;
      yield page;
    }
  }
  yield* jsonArray('{"entries":', counted(), "");
  yield `,"nextCursor":${count === limit && last !== undefined ? JSON.stringify(String(last)) : "null"}}`;
}

/** The body passed through, `done` called with its size once it has been sent or abandoned. */
export function countedBytes(
  body: ReadableStream<Uint8Array>,
  done: (bytes: number, complete: boolean) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let bytes = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        done(bytes, false);
        throw error;
      }
      if (chunk.done) {
        controller.close();
        done(bytes, true);
      } else {
        bytes += chunk.value.byteLength;
        controller.enqueue(chunk.value);
      }
    },
    cancel(reason) {
      done(bytes, false);
      return reader.cancel(reason);
    },
  });
}
