import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BLOCK_BYTES } from "../../src/durable/stream/blocks";
import { StreamStore } from "../../src/durable/stream/store";
import { streamObjects } from "./stream-helpers";

/*
 * The stream store against a model, inside a real object's SQLite: random appends (binary and
 * JSON, tiny to larger than a block, one record or many an append) and reads from every position
 * with random page sizes (pages read whole, and pages planned then read block by block) must give
 * back exactly the records appended, in order, where they were.
 * Small appends share blocks and big ones start their own, so the cases cross block boundaries.
 */

const SEED = 20261201;

const encoder = new TextEncoder();

/** One append: its records' bytes (JSON: each a message's text). */
const appendOf = (json: boolean) =>
  fc.array(
    json
      ? fc.oneof(
          fc.jsonValue({ maxDepth: 2 }).map((value) => encoder.encode(JSON.stringify(value))),
          fc
            .string({ minLength: 0, maxLength: BLOCK_BYTES })
            .map((text) => encoder.encode(JSON.stringify(text))),
        )
      : fc.oneof(
          fc.uint8Array({ minLength: 1, maxLength: 40 }),
          fc.uint8Array({ minLength: BLOCK_BYTES - 50, maxLength: BLOCK_BYTES + 50 }),
        ),
    { minLength: 1, maxLength: json ? 6 : 1 },
  );

function concat(parts: readonly Uint8Array[], separator?: number): Uint8Array {
  const size =
    parts.reduce((n, part) => n + part.byteLength, 0) +
    (separator === undefined ? 0 : Math.max(parts.length - 1, 0));
  const bytes = new Uint8Array(size);
  let at = 0;
  parts.forEach((part, i) => {
    if (separator !== undefined && i > 0) bytes[at++] = separator;
    bytes.set(part, at);
    at += part.byteLength;
  });
  return bytes;
}

describe("the stream store's blocks", () => {
  for (const json of [false, true]) {
    it(`gives back every ${json ? "JSON message" : "append"} from every position, in pages of any size`, async () => {
      const stub = streamObjects().getByName(`store-model-${json}`);
      await runInDurableObject(stub, (_instance, state) => {
        const store = state.storage.transactionSync(() => new StreamStore(state.storage.sql));
        let streams = 0;
        fc.assert(
          fc.property(
            fc.array(appendOf(json), { minLength: 1, maxLength: 12 }),
            fc.integer({ min: 1, max: 3 * BLOCK_BYTES }),
            (appends, pageBytes) => {
              const key = `s${streams++}`;
              const contentType = json ? "application/json" : "application/octet-stream";
              let stream = state.storage.transactionSync(() =>
                store.create(
                  key,
                  {
                    contentType,
                    expiry: { ttlSeconds: null, expiresAt: null },
                    closed: false,
                    fork: null,
                    now: 0,
                  },
                  [],
                ),
              );
              const records: Uint8Array[] = [];
              const batchEnds: number[] = [];
              for (const batch of appends) {
                state.storage.transactionSync(() =>
                  store.append(stream, {
                    records: batch,
                    close: false,
                    producer: null,
                    streamSeq: null,
                    now: 0,
                  }),
                );
                stream = store.get(key) as NonNullable<typeof stream>;
                records.push(...batch);
                for (let i = 0; i < batch.length; i++) batchEnds.push(records.length);
              }
              expect(stream.tail.records).toBe(records.length);
              let start = 0;
              for (let from = 0; from < records.length; from++) {
                expect(store.startsRecord(stream, { records: from, bytes: start })).toBe(true);
                expect(store.startsRecord(stream, { records: from, bytes: start + 1 })).toBe(false);
                const page = store.page(stream, from, records.length, pageBytes);
                expect(page).not.toBeNull();
                if (!page) return;
                const taken = records.slice(from, page.end.records);
                expect(page.first).toBe(from);
                expect(page.start).toBe(start);
                expect(page.batchEnd).toBe(batchEnds[from]);
                expect(taken.length).toBeGreaterThan(0);
                const size = taken.reduce((n, record) => n + record.byteLength, 0);
                expect(page.end.bytes).toBe(start + size);
                if (taken.length > 1) expect(size).toBeLessThanOrEqual(pageBytes);
                // The pieces, joined as a reader gets them, are exactly the records.
                const comma = json ? 0x2c : undefined;
                expect(concat(page.pieces, comma)).toEqual(concat(taken, comma));
                // A planned page: whole blocks' parts, read afterwards, are the same records.
                const plan = store.plan(stream, from, records.length, pageBytes);
                expect(plan?.start).toBe(start);
                if (!plan) return;
                const planned = records.slice(from, plan.end.records);
                const plannedSize = planned.reduce((n, record) => n + record.byteLength, 0);
                expect(plan.end.bytes).toBe(start + plannedSize);
                if (plan.parts.length > 1) expect(plannedSize).toBeLessThanOrEqual(pageBytes);
                const parts = plan.parts.map((part) =>
                  (store.blockData(stream, part.first) as Uint8Array).subarray(part.from, part.to),
                );
                expect(concat(parts, comma)).toEqual(concat(planned, comma));
                start += (records[from] as Uint8Array).byteLength;
              }
              expect(store.page(stream, records.length, records.length, pageBytes)).toBeNull();
            },
          ),
          { seed: SEED, numRuns: 60 },
        );
      });
    });
  }
});
