import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { blobRef } from "../../src/core/blob-refs";
import type { StoredEntry } from "../../src/core/entries";
import { entrySummary } from "../../src/core/events";
import { SseReader } from "../../src/core/sse";
import { BlobLedger } from "../../src/durable/blobs/blob-ledger";
import { partialRefAt, slices } from "../../src/durable/blobs/blob-text";
import { signBlobUrl } from "../../src/durable/blobs/blob-urls";
import type { DurableEnv } from "../../src/durable/internal";
import { sessionObjectName, tenantKey } from "../../src/durable/internal";
import { directoryShard, shardCount } from "../../src/durable/names";
import { sqlOf } from "../../src/durable/sql";
import { sha256Hex } from "../../src/http/auth";
import {
  appendEvents,
  appendText,
  endGeneration,
  openGeneration,
  sessionWithQuestion,
  snapshot,
} from "./generation-helpers";
import {
  api,
  apiWith,
  assistantMessage,
  createSession,
  directoryReplacing,
  expectError,
  info,
  KEY_B,
  KEY_C,
  sid,
  userMessage,
  withObjectEnv,
} from "./helpers";

/*
 * Blobs in R2: images and tool outputs from BLOB_MIN_BYTES (64 KiB here) stored once per tenant,
 * their references in the entries, and every read giving the values back. The same writes made
 * with the bucket unbound (`inline`) are the measure: what a client reads must not differ by a byte.
 */

const inline = apiWith({ BLOBS: undefined } as unknown as Record<string, string>);
const noUrlSecret = apiWith({ BLOB_URL_SECRET: undefined } as unknown as Record<string, string>);
const durableEnv = env as unknown as DurableEnv;
const bucket = env.BLOBS as R2Bucket;

/** `bytes` pseudo-random bytes (the same for the same seed). */
function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

const base64 = (data: Uint8Array) => (data as Uint8Array & { toBase64(): string }).toBase64();

/** A screenshot as agents send it: base64 PNG data (here 96 KiB of bytes, 128 KiB of text). */
const screenshot = (seed: number) => base64(bytes(96 * 1024, seed));

/** A tool's long output: lines with quotes, tabs, non-ASCII and an emoji, over 64 KiB. */
const toolOutput = (seed: number) =>
  Array.from(
    { length: 1200 },
    (_, i) => `${seed}:${i}\t"ok" — ünïcödé ✓ 🚀 \\path\\to\\file ${"x".repeat(30)}`,
  ).join("\n");

/** A tool's result of these texts, as an entry appended. */
const toolResult = (texts: string[]) => ({
  type: "message",
  message: {
    role: "toolResult",
    toolCallId: "call-41",
    toolName: "bash",
    content: texts.map((text) => ({ type: "text", text })),
    isError: false,
    timestamp: 1,
  },
});

function turn(seed: number) {
  return [
    {
      type: "message",
      message: {
        role: "user",
        content: [
          { type: "text", text: `look at screen ${seed}` },
          { type: "image", data: screenshot(seed), mimeType: "image/png" },
        ],
        timestamp: 1_700_000_000_000,
      },
    },
    {
      type: "message",
      message: {
        role: "toolResult",
        toolCallId: `call-${seed}`,
        toolName: "bash",
        content: [{ type: "text", text: toolOutput(seed) }],
        isError: false,
        timestamp: 1_700_000_000_001,
      },
    },
  ];
}

type Call = typeof api;

/** A session written through `call` with the same entries each time. */
async function writeSession(call: Call, seeds: number[]): Promise<string> {
  const id = sid();
  expect((await call("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
  for (const seed of seeds) {
    const res = await call("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
    expect(res.status, res.text).toBe(201);
  }
  return id;
}

/** A context's text with its version (which differs from session to session) left out. */
const unversioned = (text: string) => text.replace(/"version":"[^"]*"/, '"version":""');

/** The tenant's blobs in the bucket. */
async function storedBlobs(tenant = "tenant-a"): Promise<string[]> {
  const listed = await bucket.list({ prefix: `v1/${await tenantKey(tenant)}/` });
  return listed.objects.map((object) => object.key);
}

const keyOf = async (kind: "b64" | "txt", sha256: string, tenant = "tenant-a") =>
  `v1/${await tenantKey(tenant)}/${kind}/${sha256}`;

async function sha256(data: Uint8Array | string): Promise<string> {
  const buffer = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** What the session's own SQLite holds: its rows' payloads, and what their blobs add to them. */
async function rowBytes(id: string, tenant = "tenant-a") {
  const stub = env.SESSIONS.getByName(sessionObjectName(tenant, id));
  return runInDurableObject(stub, (_instance, state) =>
    state.storage.sql
      .exec<{ body: number; blobs: number; refs: number }>(
        `SELECT total(length(CAST(body AS BLOB))) AS body, total(blob_bytes) AS blobs,
          sum(instr(body, '\\u0000blob:') > 0) AS refs FROM entries`,
      )
      .one(),
  );
}

describe("blobs in R2", () => {
  it("stores images and tool outputs apart, and reads back contexts, entries and exports byte for byte", async () => {
    const withR2 = await writeSession(api, [1, 2]);
    const without = await writeSession(inline, [1, 2]);

    const [r2Context, inlineContext] = await Promise.all([
      api("GET", `/v1/sessions/${withR2}/context`),
      inline("GET", `/v1/sessions/${without}/context`),
    ]);
    expect(r2Context.status).toBe(200);
    expect(unversioned(r2Context.text)).toBe(unversioned(inlineContext.text));
    expect(r2Context.text).toContain(screenshot(2));
    expect(r2Context.text).not.toContain("\\u0000blob:");

    // Read back from storage rather than from the context kept in memory, it is the same.
    const leaf = (await info(withR2)).leafId as string;
    const inlineLeaf = (await info(without)).leafId as string;
    const built = await api("GET", `/v1/sessions/${withR2}/context?leafId=${leaf}`);
    expect(unversioned(built.text)).toBe(
      unversioned((await inline("GET", `/v1/sessions/${without}/context?leafId=${inlineLeaf}`)).text),
    );

    // Entries, one entry, the branch, an export: the values as written.
    const strip = (entries: Array<Record<string, unknown>>) =>
      entries.map(({ id: _id, parentId: _parent, timestamp: _time, seq: _seq, ...rest }) => rest);
    const entries = await api("GET", `/v1/sessions/${withR2}/entries`);
    const inlineEntries = await inline("GET", `/v1/sessions/${without}/entries`);
    expect(strip(entries.body.entries)).toEqual(strip(inlineEntries.body.entries));
    const one = await api("GET", `/v1/sessions/${withR2}/entries/${entries.body.entries[1].id}`);
    expect(one.body).toEqual(entries.body.entries[1]);
    const branch = await api("GET", `/v1/sessions/${withR2}/branch`);
    expect(branch.body.entries).toEqual(entries.body.entries);
    const exported = await api("GET", `/v1/sessions/${withR2}/export`);
    expect(exported.text).toContain(screenshot(1));
    expect(exported.text).not.toContain("\\u0000blob:");

    // Counted as written: the same bytes, entries and messages either way.
    const [r2Info, inlineInfo] = [await info(withR2), await info(without)];
    for (const key of ["bytes", "entryCount", "messageCount", "preview"])
      expect(r2Info[key]).toEqual(inlineInfo[key]);

    // What the session's SQLite holds: references, and no value.
    const stored = await rowBytes(withR2);
    const kept = await rowBytes(without);
    expect(stored.refs).toBe(4);
    expect(stored.body).toBeLessThan(4096);
    expect(stored.body + stored.blobs).toBe(kept.body);
    expect(r2Info.blobBytes).toBe(stored.blobs);
    expect(inlineInfo.blobBytes).toBeUndefined();
    // The image as its bytes, the output as its text, each under its SHA-256.
    const blobs = await storedBlobs();
    expect(blobs).toContain(await keyOf("b64", await sha256(bytes(96 * 1024, 1))));
    expect(blobs).toContain(await keyOf("txt", await sha256(toolOutput(1))));
    const image = await bucket.get(await keyOf("b64", await sha256(bytes(96 * 1024, 2))));
    expect(image?.httpMetadata?.contentType).toBe("image/png");
    expect(new Uint8Array(await (image as R2ObjectBody).arrayBuffer())).toEqual(bytes(96 * 1024, 2));
  });

  it("keeps values under the threshold, and text that would not survive UTF-8, in the entry", async () => {
    const id = await createSession();
    const small = "s".repeat(1000);
    const lone = `\ud800${"y".repeat(70 * 1024)}`;
    const res = await api("POST", `/v1/sessions/${id}/entries`, {
      body: toolResult([small, lone]),
    });
    expect(res.status, res.text).toBe(201);
    expect((await rowBytes(id)).refs).toBe(0);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages[0].content[1].text).toBe(lone);
  });

  it("reads back a value kept as a blob that starts with U+FEFF as it was written", async () => {
    const id = await createSession();
    const text = `\ufeff${"z".repeat(70 * 1024)}`;
    const res = await api("POST", `/v1/sessions/${id}/entries`, {
      body: toolResult([text]),
    });
    expect(res.status, res.text).toBe(201);
    expect((await rowBytes(id)).refs).toBe(1);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages[0].content[0].text === text).toBe(true);
    const entries = await api("GET", `/v1/sessions/${id}/entries`);
    expect(entries.body.entries[0].message.content[0].text === text).toBe(true);
  });

  it("stores the same screenshot once however many sessions hold it, and lets a client refer to it", async () => {
    const before = (await api("GET", "/v1/usage")).body.blobs;
    const shot = base64(bytes(80 * 1024, 77));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = await createSession();
      ids.push(id);
      const res = await api("POST", `/v1/sessions/${id}/entries`, {
        body: {
          type: "message",
          message: {
            role: "user",
            content: [{ type: "image", data: shot, mimeType: "image/png" }],
            timestamp: 1,
          },
        },
      });
      expect(res.status).toBe(201);
    }
    const key = await keyOf("b64", await sha256(bytes(80 * 1024, 77)));
    expect((await storedBlobs()).filter((k) => k === key)).toHaveLength(1);
    const after = (await api("GET", "/v1/usage")).body.blobs;
    expect(after.blobs - before.blobs).toBe(1);
    expect(after.bytes - before.bytes).toBe(shot.length + 2);

    // A reference to it, instead of its bytes, reads as the screenshot itself.
    const ref = blobRef("b64", await sha256(bytes(80 * 1024, 77)));
    const id = await createSession();
    const referred = await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        type: "message",
        message: {
          role: "user",
          content: [{ type: "image", data: ref, mimeType: "image/png" }],
          timestamp: 1,
        },
      },
    });
    expect(referred.status, referred.text).toBe(201);
    expect(referred.body.entries[0].message.content[0].data).toBe(shot);
    expect((await api("GET", `/v1/sessions/${id}/context`)).body.messages[0].content[0].data).toBe(shot);
    expect((await info(id)).bytes).toBe((await info(ids[0] as string)).bytes);
  });

  it("refuses a reference to a blob the tenant does not store, or a malformed one, writing nothing", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("first") });
    const before = await info(id);
    const missing = blobRef("b64", "0".repeat(64));
    const cases = [
      { role: "user", content: [{ type: "image", data: missing, mimeType: "image/png" }], timestamp: 1 },
      { role: "user", content: `see ${missing}`, timestamp: 1 },
      { role: "user", content: "\u0000blob:b64:xyz", timestamp: 1 },
    ];
    for (const message of cases) {
      const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { type: "message", message } });
      expectError(res, 400, "invalid_request");
      expect(res.body.error.message).toContain("blob");
    }
    // Another tenant's blob is not this tenant's either.
    const shot = base64(bytes(70 * 1024, 5));
    const theirs = await createSession({ key: KEY_B });
    await api("POST", `/v1/sessions/${theirs}/entries`, {
      key: KEY_B,
      body: {
        type: "message",
        message: {
          role: "user",
          content: [{ type: "image", data: shot, mimeType: "image/png" }],
          timestamp: 1,
        },
      },
    });
    const stolen = await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        type: "message",
        message: {
          role: "user",
          content: [
            { type: "image", data: blobRef("b64", await sha256(bytes(70 * 1024, 5))), mimeType: "image/png" },
          ],
          timestamp: 1,
        },
      },
    });
    expectError(stolen, 400, "invalid_request");
    expect(await info(id)).toEqual(before);
  });

  it("uploads nothing for a write a quota refuses: no blob in R2, no claim in the ledger, usage unchanged", async () => {
    const quotas = [
      { key: "key-mid-sessions", tenant: "tenant-mid-sessions", quota: "maxSessionBytes", limit: 200_000 },
      { key: "key-small-tenant", tenant: "tenant-small-tenant", quota: "maxTenantBytes", limit: 6000 },
    ];
    for (const { key, tenant, quota, limit } of quotas) {
      const id = await createSession({ key });
      // Most of the room taken by text no blob holds (a user's own words).
      const filled = await api("POST", `/v1/sessions/${id}/entries`, {
        key,
        body: userMessage("x".repeat(limit / 2)),
      });
      expect(filled.status, filled.text).toBe(201);
      const before = {
        info: await info(id, key),
        usage: (await api("GET", "/v1/usage", { key })).body.blobs,
      };
      for (const seed of [31, 32, 33]) {
        const res = await api("POST", `/v1/sessions/${id}/entries`, { key, body: turn(seed)[0] });
        expectError(res, 413, "quota_exceeded");
        expect(res.body.error.details).toEqual({ quota, limit });
      }
      expect(await storedBlobs(tenant)).toEqual([]);
      const ledger = await runInDurableObject(directoryShard(durableEnv, tenant, 0), (_instance, state) =>
        state.storage.sql
          .exec<{ blobs: number; owners: number }>(
            "SELECT (SELECT count(*) FROM blobs) AS blobs, (SELECT count(*) FROM blob_owners) AS owners",
          )
          .one(),
      );
      expect(ledger).toEqual({ blobs: 0, owners: 0 });
      expect((await api("GET", "/v1/usage", { key })).body.blobs).toEqual(before.usage);
      expect(before.usage).toEqual({ blobs: 0, bytes: 0 });
      expect(await info(id, key)).toEqual(before.info);
      const recorded = await runInDurableObject(
        env.SESSIONS.getByName(sessionObjectName(tenant, id)),
        (_instance, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM session_blobs").one().n,
      );
      expect(recorded).toBe(0);
    }
  });

  it("keeps nothing of the one of two appends at once the session's room refuses: its blob is given back", async () => {
    const key = "key-mid-sessions";
    const tenant = "tenant-mid-sessions";
    // Each fits the session's 200,000 bytes alone; together they do not.
    const imageEntry = (seed: number) => ({
      type: "message",
      message: {
        role: "user",
        content: [{ type: "image", data: base64(bytes(96 * 1024, seed)), mimeType: "image/png" }],
        timestamp: 1_700_000_000_000,
      },
    });
    const id = await createSession({ key });
    const before = {
      stored: await storedBlobs(tenant),
      usage: (await api("GET", "/v1/usage", { key })).body.blobs.blobs as number,
    };
    const results = await Promise.all(
      [601, 602].map((seed) =>
        api("POST", `/v1/sessions/${id}/entries`, { key, body: { entries: [imageEntry(seed)] } }),
      ),
    );
    expect(results.map((res) => res.status).sort()).toEqual([201, 413]);
    const refused = results.find((res) => res.status === 413) as (typeof results)[number];
    expectError(refused, 413, "quota_exceeded");
    expect((await info(id, key)).entryCount).toBe(1);
    const kept = results.findIndex((res) => res.status === 201);
    const keptKey = await keyOf("b64", await sha256(bytes(96 * 1024, [601, 602][kept] as number)), tenant);
    const added = (await storedBlobs(tenant)).filter((blob) => !before.stored.includes(blob));
    expect(added).toEqual([keptKey]);
    expect((await api("GET", "/v1/usage", { key })).body.blobs.blobs).toBe(before.usage + 1);
    const stub = env.SESSIONS.getByName(sessionObjectName(tenant, id));
    const recorded = await runInDurableObject(
      stub,
      (_instance, state) =>
        state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM session_blobs").one().n,
    );
    expect(recorded).toBe(1);
    const owned = await runInDurableObject(
      directoryShard(durableEnv, tenant, 0),
      (_instance, state) =>
        state.storage.sql
          .exec<{ n: number }>("SELECT count(*) AS n FROM blob_owners WHERE owner LIKE ?", `${id}\n%`)
          .one().n,
    );
    expect(owned).toBe(1);
  });

  it("keeps the blob the refused one of two appends at once shares with the written one", async () => {
    const key = "key-mid-sessions";
    const tenant = "tenant-mid-sessions";
    const image = (seed: number) => ({
      type: "image",
      data: base64(bytes(48 * 1024, seed)),
      mimeType: "image/png",
    });
    const entry = (seed: number) => ({
      type: "message",
      message: { role: "user", content: [image(604), image(seed)], timestamp: 1_700_000_000_000 },
    });
    const id = await createSession({ key });
    const before = await storedBlobs(tenant);
    const results = await Promise.all(
      [605, 606].map((seed) =>
        api("POST", `/v1/sessions/${id}/entries`, { key, body: { entries: [entry(seed)] } }),
      ),
    );
    expect(results.map((res) => res.status).sort()).toEqual([201, 413]);
    expectError(results.find((res) => res.status === 413) as (typeof results)[number], 413, "quota_exceeded");
    const kept = [605, 606][results.findIndex((res) => res.status === 201)] as number;
    const keys = await Promise.all(
      [604, kept].map(async (seed) => keyOf("b64", await sha256(bytes(48 * 1024, seed)), tenant)),
    );
    const added = (await storedBlobs(tenant)).filter((blob) => !before.includes(blob));
    expect(added.sort()).toEqual(keys.sort());
    const read = await api("GET", `/v1/sessions/${id}/entries`, { key });
    expect(read.status).toBe(200);
    expect(read.body.entries).toHaveLength(1);
    expect(read.body.entries[0].message.content).toEqual([image(604), image(kept)]);
  });

  it("refuses references that would read back past a body, an entry or the session's room, writing nothing", async () => {
    const output = toolOutput(41);
    const ref = blobRef("txt", await sha256(output));
    const cases = [
      // About 40 MB read back from 400 references to one blob: more than a body carries.
      {
        key: undefined,
        entries: Array.from({ length: 400 }, () => toolResult([ref])),
        status: 413,
        code: "payload_too_large",
      },
      // About 20 MB in one entry.
      {
        key: undefined,
        entries: [toolResult(Array.from({ length: 200 }, () => ref))],
        status: 413,
        code: "entry_too_large",
      },
      // About 300 KB in a session of at most 200,000 bytes.
      {
        key: "key-mid-sessions",
        entries: [toolResult([ref, ref, ref])],
        status: 413,
        code: "quota_exceeded",
      },
    ];
    for (const { key, entries, status, code } of cases) {
      const holder = await createSession({ key });
      expect(
        (await api("POST", `/v1/sessions/${holder}/entries`, { key, body: toolResult([output]) })).status,
      ).toBe(201);
      const id = await createSession({ key });
      const before = await info(id, key);
      const res = await api("POST", `/v1/sessions/${id}/entries`, { key, body: { entries } });
      expectError(res, status, code);
      expect(await info(id, key)).toEqual(before);
    }
  });

  it("refuses a session's name, system prompt or metadata holding a reference, writing nothing", async () => {
    // A session holding a blob, whose reference a header would otherwise be answered as.
    const held = await writeSession(api, [43]);
    const refs = [
      blobRef("txt", await sha256(toolOutput(43))),
      blobRef("txt", "0".repeat(64)),
      "\u0000blob:x",
    ];
    for (const ref of refs) {
      const headers = [
        { name: ref },
        { systemPrompt: `see ${ref}` },
        { metadata: { notes: [{ text: ref }] } },
      ];
      for (const header of headers) {
        const id = sid();
        expectError(await api("POST", "/v1/sessions", { body: { id, ...header } }), 400, "invalid_request");
        expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
        const before = await info(held);
        expectError(await api("PATCH", `/v1/sessions/${held}`, { body: header }), 400, "invalid_request");
        expect(await info(held)).toEqual(before);
        const line = {
          type: "session",
          format: "cf-session",
          version: 1,
          id,
          createdAt: new Date().toISOString(),
          ...header,
        };
        const imported = await api("POST", "/v1/sessions/import", {
          raw: `${JSON.stringify(line)}\n`,
          headers: { "Content-Type": "application/x-ndjson" },
        });
        expectError(imported, 400, "invalid_request");
        expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
      }
      const copy = sid();
      const forked = await api("POST", `/v1/sessions/${held}/fork`, {
        body: { entryId: (await info(held)).leafId, id: copy, name: ref },
      });
      expectError(forked, 400, "invalid_request");
      expect((await api("GET", `/v1/sessions/${copy}`)).status).toBe(404);
    }
  });

  it("answers a retried append with blobs as a replay", async () => {
    const id = await createSession();
    const [entry] = turn(9);
    const body = { ...entry, id: "with-a-screenshot" };
    const first = await api("POST", `/v1/sessions/${id}/entries`, { body });
    expect(first.status).toBe(201);
    const again = await api("POST", `/v1/sessions/${id}/entries`, { body });
    expect(again.status, again.text).toBe(200);
    expect(again.body.entries[0]).toEqual(first.body.entries[0]);
    expect((await info(id)).entryCount).toBe(1);
  });

  it("replays entries with blobs to watchers, over Server-Sent Events and a WebSocket", async () => {
    // About 2.5 MB as read: a WebSocket gets it in several rounds, each read ahead.
    const id = await writeSession(api, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    const { entries } = (await api("GET", `/v1/sessions/${id}/entries`)).body;
    const controller = new AbortController();
    const res = await exports.default.fetch(`http://sessions.test/v1/sessions/${id}/events?after=0`, {
      headers: { Authorization: "Bearer key-a" },
      signal: controller.signal,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("event: leaf"))
      text += decoder.decode((await reader.read()).value, { stream: true });
    await reader.cancel();
    const replayed = new SseReader()
      .push(text)
      .filter((event) => event.event === "entry")
      .map((event) => JSON.parse(event.data));
    expect(replayed).toEqual(entries);

    const ws = await exports.default.fetch(`http://sessions.test/v1/sessions/${id}/ws?after=0`, {
      headers: { Upgrade: "websocket", Authorization: "Bearer key-a" },
    });
    const socket = ws.webSocket as WebSocket;
    socket.accept();
    const received: Array<{ event: string; data: unknown }> = [];
    const done = new Promise<void>((resolve) => {
      socket.addEventListener("message", (event) => {
        const message = JSON.parse(event.data as string);
        received.push(message);
        if (message.event === "leaf") resolve();
        // A round that stops early is asked for again, as the client does.
        if (message.event === "more")
          socket.send(JSON.stringify({ after: message.data.after, token: message.data.token }));
      });
    });
    await done;
    socket.close();
    expect(received.filter((m) => m.event === "more").length).toBeGreaterThan(1);
    expect(received.filter((m) => m.event === "entry").map((m) => m.data)).toEqual(entries);
  });

  it("replays watchers without payloads from the summaries alone: no blob read, one round, no bucket needed", async () => {
    const id = await writeSession(api, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    const { entries } = (await api("GET", `/v1/sessions/${id}/entries`)).body;
    const summaries = (entries as StoredEntry[]).map(entrySummary);
    const replays = async () => {
      const sse = await exports.default.fetch(
        `http://sessions.test/v1/sessions/${id}/events?after=0&payload=false`,
        {
          headers: { Authorization: "Bearer key-a" },
        },
      );
      expect(sse.status).toBe(200);
      const reader = (sse.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = "";
      while (!text.includes("event: leaf"))
        text += decoder.decode((await reader.read()).value, { stream: true });
      await reader.cancel();
      const ws = await exports.default.fetch(
        `http://sessions.test/v1/sessions/${id}/ws?after=0&payload=false`,
        {
          headers: { Upgrade: "websocket", Authorization: "Bearer key-a" },
        },
      );
      expect(ws.status).toBe(101);
      const socket = ws.webSocket as WebSocket;
      socket.accept();
      const received: Array<{ event: string; data: unknown }> = [];
      await new Promise<void>((resolve) => {
        socket.addEventListener("message", (event) => {
          const message = JSON.parse(event.data as string);
          received.push(message);
          if (message.event === "leaf" || message.event === "more") resolve();
        });
      });
      socket.close();
      return {
        sse: new SseReader()
          .push(text)
          .filter((event) => event.event === "entry")
          .map((event) => JSON.parse(event.data)),
        socket: received.filter((m) => m.event === "entry").map((m) => m.data),
        rounds: received.filter((m) => m.event === "more").length + 1,
      };
    };
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    let gets = 0;
    const counted = new Proxy(bucket, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (name === "get") gets++;
          return value.apply(target, args);
        };
      },
    });
    const expected = { sse: summaries, socket: summaries, rounds: 1 };
    expect(await withObjectEnv(stub, { BLOBS: counted }, replays)).toEqual(expected);
    expect(gets).toBe(0);
    expect(await withObjectEnv(stub, { BLOBS: undefined }, replays)).toEqual(expected);
  });

  it("refuses a stream of a session holding blobs when the bucket is not bound, keeping no place for it", async () => {
    const id = await writeSession(api, [3]);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await evictDurableObject(stub);
    const outcome = await runInDurableObject(stub, async (instance) => {
      const objectEnv = (instance as unknown as { env: DurableEnv }).env;
      const bound = objectEnv.BLOBS;
      objectEnv.BLOBS = undefined;
      const refused = new Set<string>();
      try {
        // As many streams as a session takes: a refused one that kept its place would use them up.
        for (let i = 0; i < 500; i++) {
          const opened = await instance.events(0, true);
          refused.add(opened.ok ? "opened" : opened.error.code);
        }
      } finally {
        objectEnv.BLOBS = bound;
      }
      const opened = await instance.events(undefined, true);
      if (opened.ok) await opened.value.body.cancel();
      return { refused: [...refused], afterwards: opened.ok ? "opened" : opened.error.code };
    });
    expect(outcome).toEqual({ refused: ["unavailable"], afterwards: "opened" });
  });

  it("frees a blob when the last session that holds it is purged, keeping it while another does", async () => {
    const shot = base64(bytes(90 * 1024, 123));
    const key = await keyOf("b64", await sha256(bytes(90 * 1024, 123)));
    const message = {
      role: "user",
      content: [{ type: "image", data: shot, mimeType: "image/png" }],
      timestamp: 1,
    };
    const first = await createSession();
    await api("POST", `/v1/sessions/${first}/entries`, { body: { type: "message", message } });
    const copy = sid();
    const forked = await api("POST", `/v1/sessions/${first}/fork`, {
      body: { entryId: (await info(first)).leafId, id: copy },
    });
    expect(forked.status, forked.text).toBe(201);
    expect((await api("GET", `/v1/sessions/${copy}/context`)).body.messages[0].content[0].data).toBe(shot);
    expect((await rowBytes(copy)).refs).toBe(1);
    expect((await info(copy)).blobBytes).toBe(
      shot.length + 2 - JSON.stringify(blobRef("b64", "0".repeat(64))).length,
    );
    expect((await info(copy)).blobBytes).toBe((await info(first)).blobBytes);

    // Deleted but restorable: still held.
    expect((await api("DELETE", `/v1/sessions/${first}`)).status).toBe(204);
    expect(await storedBlobs()).toContain(key);
    expect((await api("POST", `/v1/sessions/${first}/restore`, { body: {} })).status).toBe(200);
    expect((await api("GET", `/v1/sessions/${first}/context`)).body.messages[0].content[0].data).toBe(shot);

    expect((await api("DELETE", `/v1/sessions/${first}?purge=true`)).status).toBe(204);
    expect(await storedBlobs()).toContain(key);
    expect((await api("GET", `/v1/sessions/${copy}/context`)).body.messages[0].content[0].data).toBe(shot);
    // Deleted with no recovery window, the fork is purged at once: no session holds the blob now.
    const noWindow = apiWith({ RECOVERY_WINDOW_SECONDS: "0" });
    expect((await noWindow("DELETE", `/v1/sessions/${copy}`)).status).toBe(204);
    expect(await storedBlobs()).not.toContain(key);
    const ledger = directoryShard(durableEnv, "tenant-a", 0);
    const usage = await ledger.blobUsage();
    expect(usage.blobs).toBe((await storedBlobs()).length);

    // Written again, it is stored again.
    const again = await createSession();
    await api("POST", `/v1/sessions/${again}/entries`, { body: { type: "message", message } });
    expect(await storedBlobs()).toContain(key);
  });

  it("purges a deleted session whose blobs a failed take-over of its id gave up: it is restored by no one", async () => {
    const shot = base64(bytes(90 * 1024, 9301));
    const key = await keyOf("b64", await sha256(bytes(90 * 1024, 9301)));
    const message = {
      role: "user",
      content: [{ type: "image", data: shot, mimeType: "image/png" }],
      timestamp: 1,
    };
    const id = await createSession();
    expect(
      (await api("POST", `/v1/sessions/${id}/entries`, { body: { type: "message", message } })).status,
    ).toBe(201);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    // The tenant's ledger gives up the deleted session's claims, then cannot delete the blob.
    const unreachable = new Proxy(bucket, {
      get(target, name) {
        if (name === "delete") return async () => Promise.reject(new Error("the bucket cannot be reached"));
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const ledger = directoryShard(durableEnv, "tenant-a", 0);
    await withObjectEnv(ledger, { BLOBS: unreachable }, async () => {
      const again = await api("POST", "/v1/sessions", { body: { id } });
      expectError(again, 503, "unavailable");
      expect(again.body.error.details.outcome).toBe("not_applied");
    });
    // It no longer holds its blob: it cannot come back whole, and its purge goes on.
    expectError(await api("POST", `/v1/sessions/${id}/restore`, { body: {} }), 404, "not_found");
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const tables = () =>
      runInDurableObject(
        stub,
        (_, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master").one().n,
      );
    for (let tries = 0; (await tables()) > 0; tries++) {
      expect(tries).toBeLessThan(50);
      await runDurableObjectAlarm(stub);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await storedBlobs()).not.toContain(key);
    expect((await api("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
  });

  it("refuses a write whose blobs reach the ledger after its session's purge gave its claims up, storing nothing", async () => {
    const seed = 9402;
    const key = await keyOf("b64", await sha256(bytes(96 * 1024, seed)));
    const id = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    // The session's claims of its write's blobs are held on their way to the tenant's ledger.
    let held = true;
    let reached = 0;
    const directory = directoryReplacing("claimBlobs", async (real, args) => {
      reached++;
      while (held) await new Promise((resolve) => setTimeout(resolve, 5));
      return real(...args);
    });
    await withObjectEnv(stub, { DIRECTORY: directory }, async () => {
      const append = api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
      await vi.waitFor(() => expect(reached).toBe(1), { timeout: 5000, interval: 10 });
      // The session is purged meanwhile: its claims are given up, its storage dropped.
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
      held = false;
      expectError(await append, 404, "not_found");
    });
    // The ledger claimed nothing for it, and nothing was uploaded.
    expect(await storedBlobs()).not.toContain(key);
    const ledger = directoryShard(durableEnv, "tenant-a", 0);
    const rows = await runInDurableObject(ledger, (_instance, state) => ({
      owned: state.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM blob_owners WHERE owner LIKE ?", `${id}\n%`)
        .one().n,
      blob: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM blobs WHERE key = ?", key).one()
        .n,
    }));
    expect(rows).toEqual({ owned: 0, blob: 0 });
    // A session created anew under the id is another owner: its blobs are claimed and stored.
    expect((await api("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    const again = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
    expect(again.status, again.text).toBe(201);
    expect(await storedBlobs()).toContain(key);
  });

  /** The entries of an append and the bucket's keys of their blobs (an image and a tool output). */
  async function turnBlobs(seed: number) {
    return [
      await keyOf("b64", await sha256(bytes(96 * 1024, seed))),
      await keyOf("txt", await sha256(toolOutput(seed))),
    ];
  }

  /**
   * The directory for `withObjectEnv`, holding the ledger's answers to session `id`'s claims until
   * `held` is cleared (the sessions of an isolate share the environment patched).
   */
  function claimsAnsweredLate(id: string) {
    const state = { held: true, claimed: 0 };
    const directory = directoryReplacing("claimBlobs", async (real, args) => {
      const answer = await real(...args);
      if (!String(args[0]).startsWith(`${id}\n`)) return answer;
      state.claimed++;
      while (state.held) await new Promise((resolve) => setTimeout(resolve, 5));
      return answer;
    });
    return { state, directory };
  }

  /** The ledger's claims of `id`'s owners, and its rows of `keys`. */
  function ledgerRows(id: string, keys: readonly string[]) {
    return runInDurableObject(directoryShard(durableEnv, "tenant-a", 0), (_instance, state) => ({
      owned: state.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM blob_owners WHERE owner LIKE ?", `${id}\n%`)
        .one().n,
      blobs: keys.map(
        (key) =>
          state.storage.sql.exec<{ state: string }>("SELECT state FROM blobs WHERE key = ?", key).toArray()[0]
            ?.state ?? null,
      ),
    }));
  }

  it("refuses a write whose blobs were claimed before its session's purge and uploaded after, leaving nothing in the bucket", async () => {
    const seed = 9403;
    const keys = await turnBlobs(seed);
    const id = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    // The ledger claims the write's blobs; its answer is held, so they are not uploaded yet.
    const { state, directory } = claimsAnsweredLate(id);
    await withObjectEnv(stub, { DIRECTORY: directory }, async () => {
      const append = api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
      await vi.waitFor(() => expect(state.claimed).toBe(1), { timeout: 5000, interval: 10 });
      // The session is purged meanwhile: its claims are given up, and its blobs (none in the
      // bucket yet) deleted.
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
      state.held = false;
      expectError(await append, 404, "not_found");
    });
    // What the write uploaded after the purge is deleted: neither the bucket nor the ledger holds it.
    const stored = await storedBlobs();
    for (const key of keys) expect(stored).not.toContain(key);
    expect(await ledgerRows(id, keys)).toEqual({ owned: 0, blobs: [null, null] });
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
  });

  it("deletes a purged session's uploads that reached the bucket when another of the write's uploads failed", async () => {
    const seed = 9408;
    const keys = await turnBlobs(seed);
    const id = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const { state, directory } = claimsAnsweredLate(id);
    // The image's upload fails once the tool output's has reached the bucket.
    let outputStored = false;
    const failing = new Proxy(bucket, {
      get(target, name) {
        if (name === "put") {
          return async (key: string, value: unknown) => {
            if (key !== keys[0]) {
              const put = await target.put(key, value as ArrayBuffer);
              outputStored = true;
              return put;
            }
            await vi.waitFor(() => expect(outputStored).toBe(true), { timeout: 5000, interval: 5 });
            throw new Error("R2 put failed");
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await withObjectEnv(stub, { DIRECTORY: directory, BLOBS: failing }, async () => {
      const append = api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
      await vi.waitFor(() => expect(state.claimed).toBe(1), { timeout: 5000, interval: 10 });
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
      state.held = false;
      const res = await append;
      expect(res.status).toBeGreaterThanOrEqual(400);
    });
    // The upload that reached the bucket after the purge is deleted again, as if it were the only one.
    expect(outputStored).toBe(true);
    const stored = await storedBlobs();
    for (const key of keys) expect(stored).not.toContain(key);
    expect(await ledgerRows(id, keys)).toEqual({ owned: 0, blobs: [null, null] });
  });

  /**
   * A fork of a new session's three entries, each with its own image: each entry is a page of the
   * copy of its own (2 KiB in these tests), so the fork begins with the first and copies the others
   * later.
   */
  async function forkStillCopying(seeds: readonly number[]) {
    const source = await createSession();
    const entries = seeds.map((seed) => ({
      type: "message",
      message: {
        role: "user",
        content: [
          { type: "text", text: "x".repeat(3000) },
          { type: "image", data: base64(bytes(70 * 1024, seed)), mimeType: "image/png" },
        ],
        timestamp: 1,
      },
    }));
    expect((await api("POST", `/v1/sessions/${source}/entries`, { body: { entries } })).status).toBe(201);
    const id = sid();
    const forked = await api("POST", `/v1/sessions/${source}/fork`, {
      body: { entryId: (await info(source)).leafId, id },
    });
    expect(forked.status, forked.text).toBe(201);
    return { id, stub: env.SESSIONS.getByName(sessionObjectName("tenant-a", id)) };
  }

  /** The blobs a session's object records as its own. */
  function recordedBlobs(stub: DurableObjectStub) {
    return runInDurableObject(
      stub,
      (_instance, object) =>
        object.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM session_blobs").one().n,
    );
  }

  it("records no blob of a fork's copy in a session created under its id while the copy's claim was answered", async () => {
    const { id, stub } = await forkStillCopying([9410, 9411, 9412]);
    const { state, directory } = claimsAnsweredLate(id);
    await withObjectEnv(stub, { DIRECTORY: directory }, async () => {
      // A read that needs the whole path copies the rest; its page's claim is answered late.
      const read = api("GET", `/v1/sessions/${id}/context`);
      await vi.waitFor(() => expect(state.claimed).toBe(1), { timeout: 5000, interval: 10 });
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
      expect((await api("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
      state.held = false;
      await read;
    });
    // The new session holds no blob: what the old one's copy claimed is not its.
    expect(await recordedBlobs(stub)).toBe(0);
    expect((await info(id)).entryCount).toBe(0);
  });

  it("records no blob of a fork's copy in a session created under its id while the copy read its source", async () => {
    const { id, stub } = await forkStillCopying([9413, 9414, 9415]);
    // The source's answer of the copy's next page is held.
    const held = { on: true, asked: 0 };
    const sessions = directoryReplacing(
      "forkPage",
      async (real, args) => {
        const answer = await real(...args);
        held.asked++;
        while (held.on) await new Promise((resolve) => setTimeout(resolve, 5));
        return answer;
      },
      (env as unknown as DurableEnv).SESSIONS as unknown as DurableEnv["DIRECTORY"],
    ) as unknown as DurableEnv["SESSIONS"];
    await withObjectEnv(stub, { SESSIONS: sessions }, async () => {
      const read = api("GET", `/v1/sessions/${id}/context`);
      await vi.waitFor(() => expect(held.asked).toBe(1), { timeout: 5000, interval: 10 });
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
      expect((await api("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
      held.on = false;
      // The read of the session that was there answers that its copy could not go on (a retry
      // reads the new one), not 500.
      expectError(await read, 503, "unavailable");
    });
    expect(await recordedBlobs(stub)).toBe(0);
    expect((await info(id)).entryCount).toBe(0);
  });

  it("lets a live session claim a blob whose deletion from the bucket failed, and stores it again", async () => {
    const seed = 9409;
    const keys = await turnBlobs(seed);
    const id = await createSession();
    const live = await createSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } })).status).toBe(
      201,
    );
    // The purge's deletion of the blobs is held, then fails; the live session claims them meanwhile.
    let deletionHeld = true;
    let deleting = false;
    const failing = new Proxy(bucket, {
      get(target, name) {
        if (name === "delete") {
          return async (deleted: string[]) => {
            if (!keys.some((key) => deleted.includes(key))) return target.delete(deleted);
            deleting = true;
            while (deletionHeld) await new Promise((resolve) => setTimeout(resolve, 5));
            throw new Error("R2 delete failed");
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const ledger = directoryShard(durableEnv, "tenant-a", 0);
    await withObjectEnv(ledger, { BLOBS: failing }, async () => {
      const purge = api("DELETE", `/v1/sessions/${id}?purge=true`);
      await vi.waitFor(() => expect(deleting).toBe(true), { timeout: 5000, interval: 10 });
      const shared = api("POST", `/v1/sessions/${live}/entries`, { body: { entries: turn(seed) } });
      await new Promise((resolve) => setTimeout(resolve, 50));
      deletionHeld = false;
      await purge;
      const res = await shared;
      expect(res.status, res.text).toBe(201);
    });
    const stored = await storedBlobs();
    for (const key of keys) expect(stored).toContain(key);
    const context = await api("GET", `/v1/sessions/${live}/context`);
    expect(context.status, context.text).toBe(200);
    expect(context.body.messages[0].content[1].data).toBe(screenshot(seed));
  });

  it("deletes a purged session's late upload again when it reaches the bucket while the purge's deletion is under way", async () => {
    const seed = 9405;
    const keys = await turnBlobs(seed);
    const id = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const { state, directory } = claimsAnsweredLate(id);
    // The purge's deletion from the bucket is done, but its end is held: the ledger still marks
    // the blobs as being deleted when the upload reaches the bucket.
    let deletionHeld = true;
    let deletions = 0;
    const slow = new Proxy(bucket, {
      get(target, name) {
        if (name === "delete") {
          return async (deleted: string[]) => {
            await target.delete(deleted);
            if (!keys.some((key) => deleted.includes(key))) return;
            deletions++;
            while (deletionHeld) await new Promise((resolve) => setTimeout(resolve, 5));
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const ledger = directoryShard(durableEnv, "tenant-a", 0);
    await withObjectEnv(stub, { DIRECTORY: directory }, () =>
      withObjectEnv(ledger, { BLOBS: slow }, async () => {
        const append = api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
        await vi.waitFor(() => expect(state.claimed).toBe(1), { timeout: 5000, interval: 10 });
        const purge = api("DELETE", `/v1/sessions/${id}?purge=true`);
        await vi.waitFor(() => expect(deletions).toBe(1), { timeout: 5000, interval: 10 });
        state.held = false;
        // The write's uploads reach the bucket and wait for the deletion to end.
        await vi.waitFor(
          async () => {
            const stored = await storedBlobs();
            for (const key of keys) expect(stored).toContain(key);
          },
          { timeout: 5000, interval: 10 },
        );
        deletionHeld = false;
        expect((await purge).status).toBe(204);
        expectError(await append, 404, "not_found");
      }),
    );
    const stored = await storedBlobs();
    for (const key of keys) expect(stored).not.toContain(key);
    expect(await ledgerRows(id, keys)).toEqual({ owned: 0, blobs: [null, null] });
  });

  it("uploads a blob a live session claims while a purged session's late upload is deleted again only once it is gone", async () => {
    const seed = 9406;
    const keys = await turnBlobs(seed);
    const id = await createSession();
    const live = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const { state, directory: claiming } = claimsAnsweredLate(id);
    let confirms = 0;
    const directory = directoryReplacing(
      "confirmBlobs",
      (real, args) => {
        if (String(args[0]).startsWith(`${id}\n`)) confirms++;
        return real(...args);
      },
      claiming,
    );
    // The purge's deletion is held once done; the late upload's deletion waits, until the live
    // session's write is answered or for a while, before it is made.
    let deletionHeld = true;
    let deletions = 0;
    let liveAnswered = false;
    const slow = new Proxy(bucket, {
      get(target, name) {
        if (name === "delete") {
          return async (deleted: string[]) => {
            if (!keys.some((key) => deleted.includes(key))) return target.delete(deleted);
            if (++deletions === 1) {
              await target.delete(deleted);
              while (deletionHeld) await new Promise((resolve) => setTimeout(resolve, 5));
              return;
            }
            for (const until = Date.now() + 300; !liveAnswered && Date.now() < until; ) {
              await new Promise((resolve) => setTimeout(resolve, 5));
            }
            await target.delete(deleted);
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const ledger = directoryShard(durableEnv, "tenant-a", 0);
    await withObjectEnv(stub, { DIRECTORY: directory }, () =>
      withObjectEnv(ledger, { BLOBS: slow }, async () => {
        const append = api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
        await vi.waitFor(() => expect(state.claimed).toBe(1), { timeout: 5000, interval: 10 });
        const purge = api("DELETE", `/v1/sessions/${id}?purge=true`);
        await vi.waitFor(() => expect(deletions).toBe(1), { timeout: 5000, interval: 10 });
        state.held = false;
        // The late upload's confirmation waits for the purge's deletion; then the live session's claim does.
        await vi.waitFor(() => expect(confirms).toBe(1), { timeout: 5000, interval: 10 });
        await new Promise((resolve) => setTimeout(resolve, 50));
        const shared = api("POST", `/v1/sessions/${live}/entries`, { body: { entries: turn(seed) } }).then(
          (res) => {
            liveAnswered = true;
            return res;
          },
        );
        await new Promise((resolve) => setTimeout(resolve, 50));
        deletionHeld = false;
        expect((await purge).status).toBe(204);
        expectError(await append, 404, "not_found");
        const res = await shared;
        expect(res.status, res.text).toBe(201);
      }),
    );
    // The live session's blobs were uploaded after the purged session's were deleted.
    const stored = await storedBlobs();
    for (const key of keys) expect(stored).toContain(key);
    expect(await ledgerRows(id, keys)).toEqual({ owned: 0, blobs: ["stored", "stored"] });
    const context = await api("GET", `/v1/sessions/${live}/context`);
    expect(context.status, context.text).toBe(200);
    expect(context.body.messages[0].content[1].data).toBe(screenshot(seed));
  });

  it("refuses a write whose blobs, already stored for another session, were claimed before its session's purge", async () => {
    const seed = 9407;
    const keys = await turnBlobs(seed);
    const id = await createSession();
    const live = await createSession();
    const shared = await api("POST", `/v1/sessions/${live}/entries`, { body: { entries: turn(seed) } });
    expect(shared.status, shared.text).toBe(201);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    // Its claims need no upload: the write goes on to record them once answered.
    const { state, directory } = claimsAnsweredLate(id);
    await withObjectEnv(stub, { DIRECTORY: directory }, async () => {
      const append = api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
      await vi.waitFor(() => expect(state.claimed).toBe(1), { timeout: 5000, interval: 10 });
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
      state.held = false;
      expectError(await append, 404, "not_found");
    });
    // Nothing was written where the purged session was; the live session keeps its blobs.
    const tables = await runInDurableObject(
      stub,
      (_instance, object) =>
        object.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master").one().n,
    );
    expect(tables).toBe(0);
    const stored = await storedBlobs();
    for (const key of keys) expect(stored).toContain(key);
    expect(await ledgerRows(id, keys)).toEqual({ owned: 0, blobs: ["stored", "stored"] });
  });

  it("keeps the blobs a purged session's late upload shares with a live session", async () => {
    const seed = 9404;
    const keys = await turnBlobs(seed);
    const id = await createSession();
    const live = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const { state, directory } = claimsAnsweredLate(id);
    await withObjectEnv(stub, { DIRECTORY: directory }, async () => {
      const append = api("POST", `/v1/sessions/${id}/entries`, { body: { entries: turn(seed) } });
      await vi.waitFor(() => expect(state.claimed).toBe(1), { timeout: 5000, interval: 10 });
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
      // Another session writes the same values meanwhile: it claims them anew and uploads them.
      const shared = await api("POST", `/v1/sessions/${live}/entries`, { body: { entries: turn(seed) } });
      expect(shared.status, shared.text).toBe(201);
      state.held = false;
      expectError(await append, 404, "not_found");
    });
    // The purged session's write is refused without taking away what the live session holds.
    const stored = await storedBlobs();
    for (const key of keys) expect(stored).toContain(key);
    expect(await ledgerRows(id, keys)).toEqual({ owned: 0, blobs: ["stored", "stored"] });
    const context = await api("GET", `/v1/sessions/${live}/context`);
    expect(context.body.messages[0].content[1].data).toBe(screenshot(seed));
    expect(context.body.messages[1].content[0].text).toBe(toolOutput(seed));
  });

  it("frees every blob a purge leaves unclaimed, past the thousand one deletion from the bucket takes", async () => {
    const tenant = `many-${sid()}`;
    const owner = `${sid()}\nincarnation`;
    const prefix = `v1/${await tenantKey(tenant)}/b64/`;
    const keys = Array.from({ length: 2500 }, (_, i) => `${prefix}${i.toString(16).padStart(64, "0")}`);
    for (let i = 0; i < keys.length; i += 250) {
      await Promise.all(keys.slice(i, i + 250).map((key) => bucket.put(key, "x")));
    }
    const ledger = directoryShard(durableEnv, tenant, 0);
    await runInDurableObject(ledger, (_instance, state) => {
      for (const key of keys) {
        state.storage.sql.exec("INSERT INTO blobs (key, json_bytes, state) VALUES (?, 3, 'stored')", key);
        state.storage.sql.exec("INSERT INTO blob_owners (key, owner) VALUES (?, ?)", key, owner);
      }
    });
    expect(await ledger.blobUsage()).toEqual({ blobs: keys.length, bytes: 3 * keys.length });

    expect(await ledger.releaseBlobs(owner)).toEqual({ ok: true });
    expect(await storedBlobs(tenant)).toEqual([]);
    const left = await runInDurableObject(
      ledger,
      (_instance, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM blobs").one().n,
    );
    expect(left).toBe(0);
  });

  it("releases only the purged session's claims: a blob another session holds stays, the last holder frees it", async () => {
    const tenant = `ledger-${sid()}`;
    const [first, second] = [`${sid()}\nfirst`, `${sid()}\nsecond`];
    const shared = `v1/${await tenantKey(tenant)}/b64/${"1".repeat(64)}`;
    const own = `v1/${await tenantKey(tenant)}/b64/${"2".repeat(64)}`;
    await Promise.all([bucket.put(shared, "x"), bucket.put(own, "x")]);
    const ledger = directoryShard(durableEnv, tenant, 0);
    await runInDurableObject(ledger, (_instance, state) => {
      for (const [key, owner] of [
        [shared, first],
        [shared, second],
        [own, first],
      ]) {
        state.storage.sql.exec(
          "INSERT OR IGNORE INTO blobs (key, json_bytes, state) VALUES (?, 3, 'stored')",
          key,
        );
        state.storage.sql.exec("INSERT INTO blob_owners (key, owner) VALUES (?, ?)", key, owner);
      }
    });

    expect(await ledger.releaseBlobs(first)).toEqual({ ok: true });
    expect(await storedBlobs(tenant)).toEqual([shared]);
    expect(await ledger.blobUsage()).toEqual({ blobs: 1, bytes: 3 });
    expect(await ledger.releaseBlobs(second)).toEqual({ ok: true });
    expect(await storedBlobs(tenant)).toEqual([]);
    expect(await ledger.blobUsage()).toEqual({ blobs: 0, bytes: 0 });
  });

  it("reads none of the tenant's blob rows to purge a session that holds no blob", async () => {
    const tenant = `ledger-${sid()}`;
    const ledger = directoryShard(durableEnv, tenant, 0);
    await runInDurableObject(ledger, (_instance, state) => {
      const sql = state.storage.sql;
      for (let i = 0; i < 2000; i++) {
        const key = `v1/${tenant}/b64/${i.toString(16).padStart(64, "0")}`;
        sql.exec("INSERT INTO blobs (key, json_bytes, state) VALUES (?, 3, 'stored')", key);
        sql.exec("INSERT INTO blob_owners (key, owner) VALUES (?, ?)", key, `holder-${i % 10}`);
      }
      const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
      const metered = Object.create(sql) as SqlStorage;
      metered.exec = ((query: string, ...bindings: SqlStorageValue[]) => {
        const cursor = sql.exec(query, ...bindings);
        cursors.push(cursor);
        return cursor;
      }) as typeof sql.exec;
      const unclaimed = state.storage.transactionSync(() =>
        new BlobLedger(sqlOf(metered)).release("no-blobs"),
      );
      expect(unclaimed).toEqual([]);
      expect(cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0)).toBeLessThan(20);
    });
    expect(await ledger.blobUsage()).toEqual({ blobs: 2000, bytes: 6000 });
  });

  it("frees the blobs of sessions the tenant's retention deleted, once their recovery window ends", async () => {
    const tenant = `retention-${sid()}`;
    const key = `key-${tenant}`;
    const call = apiWith({ API_KEYS: JSON.stringify({ [await sha256Hex(key)]: tenant }) });
    const as = (method: string, path: string, body?: unknown) =>
      call(method, path, { key, ...(body === undefined ? {} : { body }) });
    const id = sid();
    expect((await as("POST", "/v1/sessions", { id })).status).toBe(201);
    const shot = base64(bytes(70 * 1024, 4242));
    const message = {
      role: "user",
      content: [{ type: "image", data: shot, mimeType: "image/png" }],
      timestamp: 1,
    };
    expect((await as("POST", `/v1/sessions/${id}/entries`, { type: "message", message })).status).toBe(201);
    const blob = await keyOf("b64", await sha256(bytes(70 * 1024, 4242)), tenant);
    expect(await storedBlobs(tenant)).toEqual([blob]);
    expect((await as("PUT", "/v1/retention", { idleDays: 1 })).status).toBe(200);
    await vi.waitFor(
      async () =>
        expect((await as("GET", "/v1/sessions")).body.sessions.map((s: { id: string }) => s.id)).toEqual([
          id,
        ]),
      { timeout: 5000, interval: 30 },
    );
    // Two days on, the session is idle past the retention: deleted, still restorable, its blob kept.
    let expired = 0;
    for (let shard = 0; shard < shardCount(durableEnv); shard++) {
      expired += await runInDurableObject(directoryShard(durableEnv, tenant, shard), (directory) =>
        directory.sweep(Date.now() + 2 * 24 * 3600_000),
      );
    }
    expect(expired).toBe(1);
    expectError(await as("GET", `/v1/sessions/${id}`), 404, "not_found");
    expect(await storedBlobs(tenant)).toEqual([blob]);
    // The recovery window ends: the session's alarm purges it, and its blob goes with it.
    const stub = env.SESSIONS.getByName(sessionObjectName(tenant, id));
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE lifecycle SET purge_at = 0");
    });
    await evictDurableObject(stub);
    await runDurableObjectAlarm(stub);
    expect(await storedBlobs(tenant)).toEqual([]);
    expect(await directoryShard(durableEnv, tenant, 0).blobUsage()).toEqual({ blobs: 0, bytes: 0 });
  });

  it("carries blobs in a session's export and a tenant's backup, and imports them into another tenant", async () => {
    const id = await writeSession(api, [11, 12]);
    const exported = await api("GET", `/v1/sessions/${id}/export`);
    const imported = await api("POST", "/v1/sessions/import", {
      key: KEY_B,
      raw: exported.text,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(imported.status, imported.text).toBe(201);
    const again = await api("GET", `/v1/sessions/${id}/export`, { key: KEY_B });
    expect(again.text).toBe(exported.text);
    expect(unversioned((await api("GET", `/v1/sessions/${id}/context`, { key: KEY_B })).text)).toBe(
      unversioned((await api("GET", `/v1/sessions/${id}/context`)).text),
    );
    // Tenant B holds its own copy of each blob, and its rows refer to them.
    expect(await storedBlobs("tenant-b")).toContain(
      await keyOf("b64", await sha256(bytes(96 * 1024, 11)), "tenant-b"),
    );
    expect((await rowBytes(id, "tenant-b")).refs).toBe(4);

    // The whole tenant's backup carries them too.
    const backup = await api("GET", "/v1/export");
    expect(backup.text).toContain(screenshot(12));
    expect(backup.text).not.toContain("\\u0000blob:");
  });

  it("restores a tenant's backup with its blobs into another tenant, which then holds its own copies", async () => {
    const id = await writeSession(api, [41, 42]);
    const backup = await api("GET", "/v1/export");
    expect(backup.status, backup.text).toBe(200);
    const restored = await api("POST", "/v1/import", {
      key: KEY_C,
      raw: backup.text,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body.sessions).toContainEqual(expect.objectContaining({ id, status: "imported" }));
    const [own, copy] = [
      await api("GET", `/v1/sessions/${id}/export`),
      await api("GET", `/v1/sessions/${id}/export`, { key: KEY_C }),
    ];
    expect(copy.text).toBe(own.text);
    expect(copy.text).toContain(screenshot(41));
    // The restored tenant's rows refer to blobs of its own, stored once each.
    expect(await storedBlobs("tenant-c")).toContain(
      await keyOf("b64", await sha256(bytes(96 * 1024, 41)), "tenant-c"),
    );
    expect((await rowBytes(id, "tenant-c")).refs).toBe(4);
  });

  it("gives short-lived signed URLs with ?blobs=url, which read the blob and nothing else", async () => {
    const id = await writeSession(api, [21]);
    const res = await api("GET", `/v1/sessions/${id}/context?blobs=url`);
    expect(res.status, res.text).toBe(200);
    // Its URLs expire: the answer is neither stored nor answered 304 for the version it names.
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const again = await api("GET", `/v1/sessions/${id}/context?blobs=url`, {
      headers: { "If-None-Match": res.headers.get("ETag") as string },
    });
    expect(again.status).toBe(200);
    expect(again.body.messages).toHaveLength(2);
    const [user, tool] = res.body.messages;
    const imageUrl: string = user.content[1].data;
    const textUrl: string = tool.content[0].text;
    expect(imageUrl).toMatch(
      /^http:\/\/sessions\.test\/v1\/blobs\/[0-9a-f]{64}\/b64\/[0-9a-f]{64}\?expires=\d+&signature=/,
    );
    expect(textUrl).toContain("/txt/");
    // Everything else is as in the context with the values.
    const whole = await api("GET", `/v1/sessions/${id}/context`);
    const withUrls = structuredClone(whole.body);
    withUrls.messages[0].content[1].data = imageUrl;
    withUrls.messages[1].content[0].text = textUrl;
    expect(res.body).toEqual(withUrls);

    // Read with no key at all.
    const image = await exports.default.fetch(imageUrl);
    expect(image.status).toBe(200);
    expect(image.headers.get("Content-Type")).toBe("image/png");
    expect(image.headers.get("Content-Security-Policy")).toContain("sandbox");
    expect(new Uint8Array(await image.arrayBuffer())).toEqual(bytes(96 * 1024, 21));
    const text = await exports.default.fetch(textUrl);
    expect(text.headers.get("Content-Type")).toBe("text/plain; charset=utf-8");
    expect(await text.text()).toBe(toolOutput(21));

    const tampered = imageUrl.replace(
      /signature=./,
      (s) => `${s.slice(0, -1)}${s.endsWith("A") ? "B" : "A"}`,
    );
    expect((await exports.default.fetch(tampered)).status).toBe(403);
    const otherBlob = imageUrl.replace(/\/b64\/[0-9a-f]{64}/, `/b64/${"1".repeat(64)}`);
    expect((await exports.default.fetch(otherBlob)).status).toBe(403);
    const later = imageUrl.replace(/expires=(\d+)/, (_, n) => `expires=${Number(n) + 1}`);
    expect((await exports.default.fetch(later)).status).toBe(403);

    const secret = env.BLOB_URL_SECRET as string;
    const address = { jurisdiction: undefined, tenantKey: await tenantKey("tenant-a"), kind: "b64" as const };
    const expired = await signBlobUrl(
      secret,
      "http://sessions.test",
      { ...address, sha256: await sha256(bytes(96 * 1024, 21)) },
      Math.floor(Date.now() / 1000) - 1,
    );
    const expiredRes = await exports.default.fetch(expired);
    expect(expiredRes.status).toBe(403);
    expect(await expiredRes.text()).toContain("expired");
    const gone = await signBlobUrl(
      secret,
      "http://sessions.test",
      { ...address, sha256: "2".repeat(64) },
      Math.floor(Date.now() / 1000) + 60,
    );
    expect((await exports.default.fetch(gone)).status).toBe(404);
    expect(
      (await exports.default.fetch("http://sessions.test/v1/blobs/x/b64/y?expires=1&signature=z")).status,
    ).toBe(400);
    // A jurisdiction the service does not place data in is bad input, whatever the signature; and
    // no answer carries what the runtime says of one it cannot serve.
    for (const jurisdiction of ["", "mars", "EU", "eu ", "x".repeat(40)]) {
      const res = await exports.default.fetch(`${imageUrl}&jurisdiction=${encodeURIComponent(jurisdiction)}`);
      expect(res.status, jurisdiction).toBe(400);
      expect((await res.json()) as object).toMatchObject({ error: { code: "invalid_request" } });
    }
    const inEu = await signBlobUrl(
      secret,
      "http://sessions.test",
      { ...address, jurisdiction: "eu", sha256: await sha256(bytes(96 * 1024, 21)) },
      Math.floor(Date.now() / 1000) + 60,
    );
    const euRes = await exports.default.fetch(inEu);
    expect(euRes.status).toBe(503);
    const euBody = await euRes.text();
    expect(euBody).toContain("misconfigured");
    expect(euBody).not.toMatch(/workerd|not implemented/i);

    expectError(
      await api("GET", `/v1/sessions/${id}/context?blobs=url&format=anthropic`),
      400,
      "invalid_request",
    );
    expectError(await noUrlSecret("GET", `/v1/sessions/${id}/context?blobs=url`), 400, "invalid_request");
    expectError(await api("GET", `/v1/sessions/${id}/context?blobs=links`), 400, "invalid_request");
  });

  it("serves a blob of a type a browser would run as a page as a download", async () => {
    const id = await createSession();
    const image = (seed: number, mimeType: string) => ({ type: "image", data: screenshot(seed), mimeType });
    const content = [image(61, "text/html"), image(62, "image/svg+xml"), image(63, "image/png")];
    const entry = { type: "message", message: { role: "user", content, timestamp: 1_700_000_000_000 } };
    const written = await api("POST", `/v1/sessions/${id}/entries`, { body: entry });
    expect(written.status, written.text).toBe(201);
    const res = await api("GET", `/v1/sessions/${id}/context?blobs=url`);
    expect(res.status, res.text).toBe(200);
    const [html, svg, png] = await Promise.all(
      res.body.messages[0].content.map((part: { data: string }) => exports.default.fetch(part.data)),
    );
    for (const [answer, type] of [
      [html, "text/html"],
      [svg, "image/svg+xml"],
    ] as const) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get("Content-Type")).toBe(type);
      expect(answer.headers.get("Content-Disposition")).toBe("attachment");
      expect(answer.headers.get("Content-Security-Policy")).toContain("sandbox");
    }
    expect(png.status).toBe(200);
    expect(png.headers.get("Content-Disposition")).toBeNull();
  });

  it("gives a URL with ?blobs=url for a blob appended after the context was read", async () => {
    const id = await createSession();
    const hello = { entries: [userMessage("hello")] };
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: hello })).status).toBe(201);
    // The context at the head, kept from now on and grown by the next append.
    expect((await api("GET", `/v1/sessions/${id}/context`)).status).toBe(200);
    const [question] = turn(22);
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: [question] } })).status).toBe(
      201,
    );
    const res = await api("GET", `/v1/sessions/${id}/context?blobs=url`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.messages[1].content[1].data).toMatch(
      /^http:\/\/sessions\.test\/v1\/blobs\/[0-9a-f]{64}\/b64\//,
    );
    const whole = await api("GET", `/v1/sessions/${id}/context`);
    expect(whole.body.messages[1].content[1].data).toBe(screenshot(22));
  });

  it("does not search text stored as a blob, and still finds the rest", async () => {
    const id = await writeSession(api, [31]);
    const hits = async (q: string) =>
      (await api("GET", `/v1/sessions/${id}/search?q=${encodeURIComponent(q)}`)).body.hits;
    expect(await hits("screen")).toHaveLength(1);
    expect(await hits("ünïcödé")).toHaveLength(0);
  });

  it("sizes a context for automatic compaction by its blobs' stored sizes, reading none back", async () => {
    const reply = assistantMessage("looked");
    const usage = { ...reply.message.usage, totalTokens: 30_000 };
    // The last reply's usage and what follows it (a tool output of about 25,000 tokens), or every message.
    for (const entries of [
      [...turn(41), { ...reply, message: { ...reply.message, usage } }, ...turn(42)],
      [...turn(43), ...turn(44)],
    ]) {
      const id = await createSession();
      expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
      const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
      await evictDurableObject(stub);
      let gets = 0;
      const counted = new Proxy(bucket, {
        get(target, name) {
          const value = Reflect.get(target, name);
          if (typeof value !== "function") return value;
          return (...args: unknown[]) => {
            if (name === "get") gets++;
            return value.apply(target, args);
          };
        },
      });
      const alarmWith = async (contextWindow: number) => {
        const autoCompact = { contextWindow, reserveTokens: 16_384 };
        expect((await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact } })).status).toBe(200);
        await runDurableObjectAlarm(stub);
        return ((await info(id)).autoCompact as { status: Record<string, unknown> }).status;
      };
      // The alarm runs when the test says.
      await withObjectEnv(stub, { DIRECTORY_SYNC_MS: "3600000", BLOBS: counted }, async () => {
        expect(await alarmWith(100_000)).toEqual({ state: "idle" });
        expect(gets).toBe(0);
        // Counted by their references only, the tool outputs would leave the context under this budget.
        expect(await alarmWith(60_000)).toMatchObject({ state: "idle", lastEntryId: expect.any(String) });
      });
    }
  });
  it("answers a context in a model's format 503 unavailable when a blob it holds is gone from the bucket", async () => {
    // A seed no other test writes: its blobs are stored by this session alone.
    const before = new Set(await storedBlobs());
    const id = await writeSession(api, [8117]);
    const added = (await storedBlobs()).filter((key) => !before.has(key));
    expect(added.length).toBeGreaterThan(0);
    const kept = await Promise.all(
      added.map(async (key) => ({ key, body: await (await bucket.get(key))?.arrayBuffer() })),
    );
    await bucket.delete(added);
    try {
      const res = await api(
        "GET",
        `/v1/sessions/${id}/context?format=anthropic&model=anthropic/claude-sonnet-4-5`,
      );
      expectError(res, 503, "unavailable");
      expect(res.headers.get("retry-after")).not.toBeNull();
    } finally {
      for (const { key, body } of kept) if (body) await bucket.put(key, body);
    }
    const res = await api(
      "GET",
      `/v1/sessions/${id}/context?format=anthropic&model=anthropic/claude-sonnet-4-5`,
    );
    expect(res.status, res.text).toBe(200);
  });
});

describe("a generation's answer and blobs", () => {
  const USAGE = {
    input: 1,
    output: 1,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 2,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };

  /** An AI SDK answer whose tool returned `output`, then a reply of `text`. */
  const toolStep = (output: unknown, text = "Done.") => [
    { type: "start-step" },
    { type: "tool-input-available", toolCallId: "t1", toolName: "bash", input: { cmd: "cat log" } },
    { type: "tool-output-available", toolCallId: "t1", output },
    { type: "finish-step" },
    { type: "start-step" },
    { type: "text-start", id: "x" },
    { type: "text-delta", id: "x", delta: text },
    { type: "text-end", id: "x" },
    { type: "finish-step" },
    { type: "finish", finishReason: "stop" },
  ];

  /** A completed AI SDK generation of `parts` in a session with one question, and its outcome. */
  async function generated(parts: unknown[]) {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id, { format: "ai-sdk-ui", model: "openai/gpt-5" });
    expect((await appendEvents(generation.stream, parts)).status).toBe(204);
    const done = await endGeneration(id, generation.id, "complete");
    expect(done.status, done.text).toBe(201);
    return { id, generation, done };
  }

  /** The same messages appended through the entries door to a session with one question. */
  async function appended(entries: Array<{ message: unknown }>) {
    const { id } = await sessionWithQuestion();
    const res = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: entries.map(({ message }) => ({ type: "message", message })) },
    });
    expect(res.status, res.text).toBe(201);
    return id;
  }

  it("gives back the blobs of an answer the session's room refused, once it is written cut short", async () => {
    const key = "key-mid-sessions";
    const tenant = "tenant-mid-sessions";
    const output = toolOutput(603);
    const { id } = await sessionWithQuestion(key);
    const generation = await openGeneration(id, { format: "ai-sdk-ui", model: "openai/gpt-5" }, key);
    expect((await appendEvents(generation.stream, toolStep(output), {}, key)).status).toBe(204);
    // The answer's entries take about 900 bytes more than its chunks: the session is left 450.
    const filler = 200_000 - 450 - ((await info(id, key)).bytes as number) - 216;
    const filled = await api("POST", `/v1/sessions/${id}/entries`, {
      key,
      body: userMessage("x".repeat(filler)),
    });
    expect(filled.status, filled.text).toBe(201);
    const holds = (await info(id, key)).bytes;
    expect(holds).toBeGreaterThan(200_000 - 800);
    expect(holds).toBeLessThan(200_000 - 100);
    const before = {
      stored: await storedBlobs(tenant),
      usage: (await api("GET", "/v1/usage", { key })).body.blobs,
    };
    const done = await endGeneration(id, generation.id, "complete", {}, key);
    expect(done.status, done.text).toBe(201);
    expect(done.body.entries.at(-1).message).toMatchObject({ role: "assistant", stopReason: "length" });
    expect(done.body.entries.at(-1).message.errorMessage).toContain("quota_exceeded");
    expect(JSON.stringify(done.body.entries)).not.toContain(output);
    expect(await storedBlobs(tenant)).toEqual(before.stored);
    expect(await storedBlobs(tenant)).not.toContain(await keyOf("txt", await sha256(output), tenant));
    expect((await api("GET", "/v1/usage", { key })).body.blobs).toEqual(before.usage);
    const recorded = await runInDurableObject(
      env.SESSIONS.getByName(sessionObjectName(tenant, id)),
      (_instance, state) =>
        state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM session_blobs").one().n,
    );
    expect(recorded).toBe(0);
  });

  it("stores a large tool output as a blob, as an append of the same messages does", async () => {
    const output = toolOutput(41);
    const { id, generation, done } = await generated(toolStep(output));
    expect(done.body.entries[1].message.content).toEqual([{ type: "text", text: output }]);
    const door = await appended(done.body.entries);

    const [stored, byDoor] = [await rowBytes(id), await rowBytes(door)];
    expect(stored.refs).toBe(1);
    expect(stored.refs).toBe(byDoor.refs);
    expect(stored.blobs).toBe(byDoor.blobs);
    expect(stored.body).toBeLessThan(4096);
    const [generatedInfo, doorInfo] = [await info(id), await info(door)];
    expect(generatedInfo.blobBytes).toBe(stored.blobs);
    expect(generatedInfo.blobBytes).toBe(doorInfo.blobBytes);
    expect(generatedInfo.bytes).toBeGreaterThan(output.length);
    expect(await storedBlobs()).toContain(await keyOf("txt", await sha256(output)));
    // Read back, it is the output as the tool gave it.
    const entries = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries;
    expect(entries[2].message.content[0].text).toBe(output);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages[2].content[0].text).toBe(output);
    // A repeated complete answers the same entries, values and all.
    const again = await endGeneration(id, generation.id, "complete");
    expect(again.status, again.text).toBe(200);
    expect(again.body.entries).toEqual(done.body.entries);
  });

  it("writes a chunk appended while its blobs were stored in its answer, or refuses it after", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id, { format: "ai-sdk-ui" });
    // Up to the reply's first words: the tool's output is stored as a blob as the generation ends.
    expect((await appendEvents(generation.stream, toolStep(toolOutput(43)).slice(0, 7))).status).toBe(204);
    const [done, late] = await Promise.all([
      endGeneration(id, generation.id, "complete"),
      appendEvents(generation.stream, { type: "text-delta", id: "x", delta: " More." }),
    ]);
    expect(done.status, done.text).toBe(201);
    const reply = done.body.entries[2].message.content;
    if (late.status === 204) expect(reply).toEqual([{ type: "text", text: "Done. More." }]);
    else {
      expect(late.status).toBe(409);
      expect(reply).toEqual([{ type: "text", text: "Done." }]);
    }
    expect((await rowBytes(id)).refs).toBe(1);
  });

  it("reads a reference to a blob the tenant holds as its value, as an append does", async () => {
    const output = toolOutput(42);
    // The tenant holds the output: another session's append stored it.
    await appended([{ message: turn(42)[1]?.message }]);
    const ref = blobRef("txt", await sha256(output));
    const { id, done } = await generated(toolStep(ref, ref));

    expect(done.body.entries[1].message.content).toEqual([{ type: "text", text: output }]);
    expect(done.body.entries[2].message.content).toEqual([{ type: "text", text: output }]);
    const door = await appended([
      { message: { ...done.body.entries[1].message, content: [{ type: "text", text: ref }] } },
    ]);
    const entries = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries;
    expect(entries[2].message.content[0].text).toBe(output);
    expect(entries[3].message.content[0].text).toBe(output);
    expect(JSON.stringify(entries)).not.toContain("\\u0000blob:");
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages[2].content[0].text).toBe(output);
    expect(context.body.messages[3].content[0].text).toBe(output);
    // The session claimed the blob it holds, as the door's session did.
    expect((await rowBytes(id)).refs).toBe(1);
    expect((await info(id)).blobBytes).toBe((await info(door)).blobBytes);
  });

  it("refuses a given message holding a reference the tenant cannot read, writing nothing", async () => {
    const missing = blobRef("txt", "0".repeat(64));
    for (const text of [missing, `see ${missing}`, "\u0000blob:txt:xyz"]) {
      const { id } = await sessionWithQuestion();
      const generation = await openGeneration(id);
      await appendText(generation.stream, "draft");
      const before = await snapshot(id, generation.stream);
      const message = {
        role: "assistant",
        content: [{ type: "text", text }],
        api: "a",
        provider: "p",
        model: "m",
        usage: USAGE,
        stopReason: "stop",
        timestamp: 1,
      };
      // As the entries door refuses it.
      const byDoor = await api("POST", `/v1/sessions/${id}/entries`, { body: { type: "message", message } });
      expectError(byDoor, 400, "invalid_request");
      const res = await endGeneration(id, generation.id, "complete", { message });
      expectError(res, 400, "invalid_request");
      expect(res.body.error.message).toContain("blob");
      expect(await snapshot(id, generation.stream)).toEqual(before);
      expect(before.closed).toBe(false);
    }
  });

  it("ends an answer holding a reference the tenant cannot read cut short, never storing the reference", async () => {
    const missing = blobRef("txt", "0".repeat(64));
    const { id, generation, done } = await generated(toolStep(missing));
    expect(done.body.entries).toHaveLength(1);
    const [entry] = done.body.entries;
    expect(entry.id).not.toBe(generation.id);
    expect(entry.message).toMatchObject({ role: "assistant", stopReason: "length" });
    expect(entry.message.errorMessage).toContain("invalid_request");
    expect(entry.message.content).toEqual([{ type: "text", text: "Done." }]);

    // A text answer that is a reference keeps none of its text.
    const text = await sessionWithQuestion();
    const plain = await openGeneration(text.id);
    await appendText(plain.stream, missing);
    const stopped = await endGeneration(text.id, plain.id, "stop");
    expect(stopped.status, stopped.text).toBe(201);
    expect(stopped.body.entries[0].message).toMatchObject({ stopReason: "length", content: [] });

    for (const session of [id, text.id]) {
      expect((await rowBytes(session)).refs).toBe(0);
      const entries = (await api("GET", `/v1/sessions/${session}/entries`)).text;
      expect(entries).not.toContain("\\u0000blob:");
      expect(entries).not.toContain("0".repeat(64));
    }
  });
});

describe("references cut between two chunks of a stream", () => {
  it("wait for the next chunk only when a chunk ends in the first part of one", () => {
    const ref = JSON.stringify(blobRef("txt", "a".repeat(64)));
    for (let cut = 1; cut < ref.length; cut++) {
      const text = `{"text":${ref.slice(0, cut)}`;
      expect(partialRefAt(text), `cut at ${cut}`).toBe(8);
    }
    expect(partialRefAt(`{"text":${ref}}`)).toBe(`{"text":${ref}}`.length);
    expect(partialRefAt('data: {"event":"leaf"}\n\n')).toBe('data: {"event":"leaf"}\n\n'.length);
    expect(partialRefAt('{"a":"b')).toBe('{"a":"b'.length);
    expect(partialRefAt('{"a":"\\u0000blob:png')).toBe('{"a":"\\u0000blob:png'.length);
  });
});

describe("a kept context streamed in slices", () => {
  it("never cuts a character in two", () => {
    const text = `${"a".repeat(1024 * 1024 - 1)}😀${"b".repeat(10)}`;
    const parts = [...slices(text)];
    expect(parts.join("")).toBe(text);
    expect(parts[0]).toHaveLength(1024 * 1024 - 1);
    for (const part of parts) expect(new TextDecoder().decode(new TextEncoder().encode(part))).toBe(part);
  });
});
