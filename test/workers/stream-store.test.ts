import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BLOCK_BYTES, bytesOf, unpacked } from "../../src/durable/stream/blocks";
import { recordsOf } from "../../src/durable/stream/create";
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

/**
 * Rewrites a stream's blocks as rows written before the packing kept them: an end and an append end
 * per record, no record count.
 */
function toEarlierRows(sql: SqlStorage, streamId: number, json: boolean): void {
  const rows = sql
    .exec<{
      first: number;
      records: number | null;
      ends: ArrayBuffer;
      batch_ends: ArrayBuffer;
      data: ArrayBuffer;
    }>("SELECT first, records, ends, batch_ends, data FROM stream_blocks WHERE stream_id = ?", streamId)
    .toArray();
  for (const row of rows) {
    const { ends, batchEnds } = unpacked(
      { records: row.records, ends: new Uint8Array(row.ends), batchEnds: new Uint8Array(row.batch_ends) },
      new Uint8Array(row.data),
      json,
    );
    sql.exec(
      "UPDATE stream_blocks SET records = NULL, ends = ?, batch_ends = ? WHERE stream_id = ? AND first = ?",
      bytesOf(ends),
      bytesOf(batchEnds),
      streamId,
      row.first,
    );
  }
}

describe("the stream store's blocks", () => {
  for (const [json, earlier] of [
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ] as const) {
    const rows = earlier ? ", its first appends in rows written before the packing" : "";
    it(`gives back every ${json ? "JSON message" : "append"} from every position, in pages of any size${rows}`, async () => {
      const stub = streamObjects().getByName(`store-model-${json}-${earlier}`);
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
              for (const [n, batch] of appends.entries()) {
                if (earlier && n === Math.ceil(appends.length / 2))
                  toEarlierRows(state.storage.sql, stream.id, json);
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

describe("a page of a long stream", () => {
  it("reads the rows of its own blocks and a few more, planned or read, not the stream's rest", async () => {
    const stub = streamObjects().getByName("store-long-stream");
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      const store = state.storage.transactionSync(() => new StreamStore(sql));
      const contentType = "application/octet-stream";
      let stream = state.storage.transactionSync(() =>
        store.create(
          "long",
          { contentType, expiry: { ttlSeconds: null, expiresAt: null }, closed: false, fork: null, now: 0 },
          [],
        ),
      );
      // Each append over half a block: a block of its own.
      const records = [new Uint8Array(BLOCK_BYTES / 2 + 100).fill(1)];
      const blocks = 5000;
      state.storage.transactionSync(() => {
        for (let i = 0; i < blocks; i++) {
          store.append(stream, { records, close: false, producer: null, streamSeq: null, now: 0 });
          stream = store.get("long") as NonNullable<typeof stream>;
        }
      });
      const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
      const metered = Object.create(sql) as SqlStorage;
      metered.exec = ((query: string, ...bindings: SqlStorageValue[]) => {
        const cursor = sql.exec(query, ...bindings);
        cursors.push(cursor);
        return cursor;
      }) as typeof sql.exec;
      const reader = state.storage.transactionSync(() => new StreamStore(metered));
      const size = records[0]?.byteLength as number;
      for (const from of [0, blocks / 2, blocks - 10]) {
        cursors.length = 0;
        const plan = reader.plan(stream, from, stream.tail.records, 4 * size);
        expect(plan?.parts).toHaveLength(4);
        expect(plan?.end).toEqual({ records: from + 4, bytes: (from + 4) * size });
        expect(cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0)).toBeLessThan(200);
        cursors.length = 0;
        const page = reader.page(stream, from, stream.tail.records, 4 * size);
        expect(page?.end).toEqual(plan?.end);
        expect(cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0)).toBeLessThan(200);
      }
    });
  });
});

describe("what a stream's rows hold", () => {
  const MiB = 1024 * 1024;
  const cases = [
    {
      name: "a JSON append of 1 MiB of one-digit messages",
      contentType: "application/json",
      appends: 1,
      size: MiB,
      json: true,
    },
    {
      name: "JSON appends of 20-byte messages",
      contentType: "application/json",
      appends: 20_000,
      size: 20,
      json: true,
    },
    {
      name: "a binary append of 1 MiB",
      contentType: "application/octet-stream",
      appends: 1,
      size: MiB,
      json: false,
    },
    {
      name: "binary appends of 20 bytes",
      contentType: "application/octet-stream",
      appends: 20_000,
      size: 20,
      json: false,
    },
  ];
  for (const { name, contentType, appends, size, json } of cases) {
    it(`stores at most 1.3 times what was appended: ${name}`, async () => {
      const stub = streamObjects().getByName(`store-size-${name}`);
      const body = json
        ? size === MiB
          ? encoder.encode(`[${"1,".repeat(size / 2 - 1)}1]`)
          : encoder.encode(JSON.stringify("x".repeat(size - 2)))
        : new Uint8Array(size).fill(7);
      await runInDurableObject(stub, (_instance, state) => {
        const before = state.storage.sql.databaseSize;
        const store = state.storage.transactionSync(() => new StreamStore(state.storage.sql));
        let stream = state.storage.transactionSync(() =>
          store.create(
            "sized",
            { contentType, expiry: { ttlSeconds: null, expiresAt: null }, closed: false, fork: null, now: 0 },
            [],
          ),
        );
        const records = recordsOf(contentType, body);
        for (let i = 0; i < appends; i++) {
          state.storage.transactionSync(() =>
            store.append(stream, { records, close: false, producer: null, streamSeq: null, now: 0 }),
          );
          stream = store.get("sized") as NonNullable<typeof stream>;
        }
        const appended = body.byteLength * appends;
        const stored = state.storage.sql.databaseSize - before;
        expect(stored / appended).toBeLessThanOrEqual(1.3);
        // And it reads back whole.
        const last = store.page(stream, stream.tail.records - 1, stream.tail.records, MiB);
        expect(last?.end).toEqual(stream.tail);
      });
    });
  }
});
