import { jsonArray } from "../core/context-answer";
import type { StoredEntry } from "../core/entries";
import { nodeOpening, type TreeStep } from "../core/tree";

/*
 * Answers built while they are sent: long paths and large entries reach the client page by page,
 * so the router never holds a whole session either. And bodies counted as they pass.
 */

/** Each entry of each page as its JSON. */
export async function* entryJson(pages: AsyncIterable<StoredEntry[]>): AsyncGenerator<string[]> {
  for await (const page of pages) yield page.map((entry) => JSON.stringify(entry));
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
  yield* jsonArray('{"entries":', entryJson(counted()), "");
  yield `,"nextCursor":${count === limit && last !== undefined ? JSON.stringify(String(last)) : "null"}}`;
}

/**
 * `{"roots":[…]}` of a tree's steps, each node written as its page comes: the JSON `treeToJson`
 * writes, without the tree ever whole in memory.
 */
export async function* treeJson(pages: AsyncIterable<readonly TreeStep[]>): AsyncGenerator<string> {
  yield '{"roots":[';
  // A node follows its parent's opening, or (after a list that ended) a sibling.
  let ended = false;
  for await (const page of pages) {
    const parts: string[] = [];
    for (const { node, closes } of page) {
      if (ended) parts.push(",");
      parts.push(nodeOpening(node), "]}".repeat(closes));
      ended = closes > 0;
    }
    yield parts.join("");
  }
  yield "]}";
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
