import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { newId } from "../../src/core/ids";
import { LATEST_EXPIRES_AT } from "../../src/core/limits";
import { objectCalls } from "../../src/durable/object-calls";
import {
  MAX_APPEND_BYTES,
  STREAM_KEY_HEADER,
  STREAM_TENANT_HEADER,
  streamObjectName,
} from "../../src/durable/stream";
import { api, KEY_A, KEY_B, KEY_C, withObjectEnv } from "./helpers";
import { append, call, create, head, readAll, streamObjects } from "./stream-helpers";

/*
 * The tenant's streams in its backup: GET /v1/export writes them after the sessions, each with its
 * appends, and POST /v1/import makes them again in another tenant with the same data, offsets,
 * expiry and closing (an expiry later than a create takes, as the latest it takes); a stream that
 * cannot be written is reported and leaves nothing.
 */

const NDJSON = { "Content-Type": "application/x-ndjson" };

type Line = Record<string, unknown> & { type: string };

const lines = (text: string): Line[] =>
  text
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Line);

async function exportTenant(key: string, cursor?: string): Promise<string> {
  const res = await api("GET", `/v1/export${cursor ? `?cursor=${cursor}` : ""}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.text;
}

const importTenant = (text: string, key: string, query = "") =>
  api("POST", `/v1/import${query}`, { key, raw: text, headers: NDJSON });

/** The streams of a tenant, each as a reader sees it: data, tail offset, closed, expiry. */
async function snapshot(key: string, paths: string[]) {
  const seen: Record<string, unknown> = {};
  for (const path of paths) {
    const res = await call("HEAD", `/v1/stream/${path}`, { key });
    const data = await readAll(`/v1/stream/${path}`, "-1", key);
    seen[path] = {
      status: res.status,
      contentType: res.headers.get("Content-Type"),
      offset: res.headers.get("Stream-Next-Offset"),
      closed: res.headers.get("Stream-Closed"),
      ttl: res.headers.get("Stream-TTL"),
      text: data.text,
    };
  }
  return seen;
}

/** Tenant B's stream at `path` as an import writes it: its object, and its protocol requests. */
function importedStream(path: string) {
  const object = streamObjects().getByName(streamObjectName("tenant-b", path));
  const request = (method: string, headers: Record<string, string> = {}, body?: string) =>
    new Request(`https://streams.internal/v1/stream/${path}`, {
      method,
      headers: { ...headers, [STREAM_TENANT_HEADER]: "tenant-b", [STREAM_KEY_HEADER]: path },
      body,
    });
  return { object, request };
}

const JSON_TYPE = { "Content-Type": "application/json" };

/** The stream objects as the objects reach them (`withObjectEnv`), counting the calls made to the one named `name`. */
function countingCalls(name: string) {
  const namespace = streamObjects();
  let calls = 0;
  const counting = (stub: object) =>
    new Proxy(stub, {
      get(target, method) {
        const value = Reflect.get(target, method);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          calls++;
          return value(...args);
        };
      },
    });
  const streams = new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (property !== "getByName") return typeof value === "function" ? value.bind(target) : value;
      return (objectName: string) => {
        const stub = target.getByName(objectName);
        return objectName === name ? counting(stub) : stub;
      };
    },
  });
  return { streams, calls: () => calls };
}

/** A backup's header line of a stream at `path`: open, of text, never expiring, but for `fields`. */
const header = (path: string, fields: Record<string, unknown> = {}) => ({
  type: "stream",
  path,
  contentType: "text/plain",
  ttlSeconds: null,
  expiresAt: null,
  closed: false,
  ...fields,
});

/** A backup of the streams `headers` describe, each holding one append of "x". */
const exported = (...headers: Record<string, unknown>[]) =>
  [
    { type: "export", format: "cf-tenant", version: 1, cursor: null },
    ...headers.flatMap((line) => [
      line,
      { type: "stream_append", base64: "eA==" },
      { type: "cursor", cursor: "x" },
    ]),
    { type: "end", sessions: 0, streams: headers.length },
  ]
    .map((line) => JSON.stringify(line))
    .join("\n");

describe("streams in the tenant's backup", () => {
  it("come back in another tenant with the same data, offsets, expiry and closing", async () => {
    const prefix = `backup-${newId()}`;
    const bytes = `${prefix}/bytes`;
    const json = `${prefix}/json`;
    const fork = `${prefix}/json-fork`;
    const timed = `${prefix}/timed`;
    await create(`/v1/stream/${bytes}`, { key: KEY_C, body: "Hello, " });
    expect((await append(`/v1/stream/${bytes}`, "world", {}, KEY_C)).status).toBe(204);
    expect((await append(`/v1/stream/${bytes}`, new Uint8Array([0, 255, 10, 128]), {}, KEY_C)).status).toBe(
      204,
    );
    expect(
      (await call("POST", `/v1/stream/${bytes}`, { key: KEY_C, headers: { "Stream-Closed": "true" } }))
        .status,
    ).toBe(204);
    await create(`/v1/stream/${json}`, {
      key: KEY_C,
      contentType: "application/json",
      body: '[{"n":1},{"s":"a,b]"}]',
    });
    const jsonAppend = await call("POST", `/v1/stream/${json}`, {
      key: KEY_C,
      body: '[ 2.50 , "\\u00e9" ]',
      headers: { "Content-Type": "application/json" },
    });
    expect(jsonAppend.status).toBe(204);
    await create(`/v1/stream/${fork}`, {
      key: KEY_C,
      contentType: "application/json",
      body: "[3]",
      headers: { "Stream-Forked-From": `/v1/stream/${json}` },
    });
    await create(`/v1/stream/${timed}`, { key: KEY_C, body: "x", headers: { "Stream-TTL": "3600" } });
    const paths = [bytes, json, fork, timed];
    const before = await snapshot(KEY_C, paths);

    const text = await exportTenant(KEY_C);
    const all = lines(text);
    const headers = all.filter((line) => line.type === "stream");
    expect(headers.map((line) => line.path)).toEqual(paths);
    expect(headers[0]).toEqual({
      type: "stream",
      path: bytes,
      contentType: "text/plain",
      ttlSeconds: null,
      expiresAt: null,
      closed: true,
    });
    // One line per append, as written: the JSON append's messages as their text.
    expect(all.filter((line) => line.type === "stream_append")).toContainEqual({
      type: "stream_append",
      json: '2.50,"\\u00e9"',
    });
    expect(all.at(-1)).toMatchObject({ type: "end", streams: 4 });

    const report = await importTenant(text, KEY_B);
    expect(report.status, report.text).toBe(200);
    expect(report.body.streams).toEqual([
      { path: bytes, status: "imported", appends: 3 },
      { path: json, status: "imported", appends: 2 },
      { path: fork, status: "imported", appends: 3 },
      { path: timed, status: "imported", appends: 1 },
    ]);
    expect(report.body.warnings).toEqual([]);
    expect(await snapshot(KEY_B, paths)).toEqual(before);
    // A reader resumes at the offset it had: here after the first append.
    const after = (
      await call("GET", `/v1/stream/${bytes}?offset=0000000000000001_0000000000000007`, { key: KEY_B })
    ).text;
    expect(after.startsWith("world")).toBe(true);

    // Again: the paths are taken, skipped (or, asked to, refused), and nothing changes.
    const again = await importTenant(text, KEY_B);
    expect(again.body.streams.map((s: { status: string }) => s.status)).toEqual([
      "skipped",
      "skipped",
      "skipped",
      "skipped",
    ]);
    const refused = await importTenant(text, KEY_B, "?existing=refuse");
    expect(refused.body.streams[0]).toMatchObject({
      path: bytes,
      status: "refused",
      error: { code: "already_exists" },
    });
    expect(await snapshot(KEY_B, paths)).toEqual(before);
  });

  it("resumes after a stream's cursor line", async () => {
    const prefix = `resume-${newId()}`;
    for (const name of ["a", "b", "c"])
      await create(`/v1/stream/${prefix}/${name}`, { key: KEY_A, body: name });
    const all = lines(await exportTenant(KEY_A));
    const ours = all.filter((line) => line.type === "stream" && String(line.path).startsWith(prefix));
    expect(ours).toHaveLength(3);
    const at = all.findIndex((line) => line.path === `${prefix}/a`);
    const cursor = all.slice(at).find((line) => line.type === "cursor")?.cursor as string;
    const rest = lines(await exportTenant(KEY_A, cursor));
    expect(rest.filter((line) => line.type === "session")).toEqual([]);
    const resumed = rest.filter((line) => line.type === "stream").map((line) => line.path);
    expect(resumed).toContain(`${prefix}/b`);
    expect(resumed).not.toContain(`${prefix}/a`);
  });

  it("reports a stream it cannot write, and leaves nothing of it", async () => {
    const path = `broken-${newId()}`;
    const stream = [
      { type: "export", format: "cf-tenant", version: 1, cursor: null },
      {
        type: "stream",
        path,
        contentType: "application/json",
        ttlSeconds: null,
        expiresAt: null,
        closed: false,
      },
      { type: "stream_append", json: "1,2" },
      { type: "stream_append", json: "not json" },
      { type: "cursor", cursor: "x" },
      {
        type: "stream",
        path: "",
        contentType: "text/plain",
        ttlSeconds: null,
        expiresAt: null,
        closed: false,
      },
      { type: "cursor", cursor: "y" },
      {
        type: "stream",
        path: `${path}-b`,
        contentType: "text/plain",
        ttlSeconds: null,
        expiresAt: null,
        closed: false,
      },
      { type: "stream_append", base64: "not base64!" },
      { type: "cursor", cursor: "z" },
      { type: "end", sessions: 0, streams: 3 },
    ]
      .map((line) => JSON.stringify(line))
      .join("\n");
    const report = await importTenant(stream, KEY_B);
    expect(report.status, report.text).toBe(200);
    expect(report.body.streams).toMatchObject([
      { path, status: "failed", error: { code: "invalid_request", line: 4 } },
      { path: null, status: "failed", error: { code: "invalid_request", line: 6 } },
      { path: `${path}-b`, status: "failed", error: { code: "invalid_request", line: 9 } },
    ]);
    expect((await head(`/v1/stream/${path}`, KEY_B)).status).toBe(404);
    expect((await head(`/v1/stream/${path}-b`, KEY_B)).status).toBe(404);
    const listed = await api("GET", `/v1/streams?prefix=${path}`, { key: KEY_B });
    expect(listed.body.streams).toEqual([]);
  });

  it("reports a stream it cannot make, and leaves its path free", async () => {
    const path = `unmade-${newId()}`;
    const refused = [
      header(`${path}/past`, { expiresAt: "2000-01-01T00:00:00Z" }),
      header(`${path}/type`, { contentType: "text/a\nb" }),
    ];
    const report = await importTenant(exported(...refused), KEY_B);
    expect(report.status, report.text).toBe(200);
    expect(report.body.streams).toMatchObject(
      refused.map((line, at) => ({
        path: line.path,
        status: "failed",
        error: { code: "invalid_request", line: 2 + 3 * at },
      })),
    );
    for (const line of refused) {
      const at = `/v1/stream/${line.path}`;
      expect((await head(at, KEY_B)).status).toBe(404);
      expect((await call("PUT", at, { key: KEY_B, body: "y" })).status).toBe(201);
    }

    // Refused by the stream's object itself: past the tenant's maxStreams.
    const ONE = "key-import-one-stream";
    await create(`/v1/stream/${path}/kept`, { key: ONE, body: "k" });
    const full = await importTenant(exported(header(`${path}/full`)), ONE);
    expect(full.status, full.text).toBe(200);
    expect(full.body.streams).toMatchObject([
      { path: `${path}/full`, status: "failed", error: { code: "quota_exceeded" } },
    ]);
    expect((await head(`/v1/stream/${path}/full`, ONE)).status).toBe(404);
    expect((await api("GET", `/v1/streams?prefix=${path}/full`, { key: ONE })).body.streams).toEqual([]);
    expect((await call("DELETE", `/v1/stream/${path}/kept`, { key: ONE })).status).toBe(204);
    const made = await call("PUT", `/v1/stream/${path}/full`, { key: ONE, body: "y" });
    expect(made.status, made.text).toBe(201);
  });

  it(`restores a stream whose expiry is at or past ${LATEST_EXPIRES_AT}, ending at the latest a create takes`, async () => {
    const path = `far-${newId()}`;
    const latest = Date.parse(LATEST_EXPIRES_AT);
    const far = [
      header(`${path}/at`, { expiresAt: "2300-01-01T00:00:00Z" }),
      header(`${path}/bound`, { expiresAt: LATEST_EXPIRES_AT }),
      // A window that, counted from the import, would end past it.
      header(`${path}/ttl`, { ttlSeconds: 200 * 365 * 24 * 3600 }),
    ];
    const before = Date.now();
    const report = await importTenant(exported(...far), KEY_B);
    const after = Date.now();
    expect(report.status, report.text).toBe(200);
    expect(report.body.streams).toEqual(
      far.map((line) => ({ path: line.path, status: "imported", appends: 1 })),
    );
    for (const line of far) {
      const at = `/v1/stream/${line.path}`;
      expect((await readAll(at, "-1", KEY_B)).text).toBe("x");
      const seen = await call("HEAD", at, { key: KEY_B });
      expect(seen.status).toBe(200);
      if (line.expiresAt !== null) {
        expect(seen.headers.get("Stream-Expires-At")).toBe(new Date(latest - 1).toISOString());
        expect(seen.headers.get("Stream-TTL")).toBeNull();
      } else {
        // The longest window a create took then: ending before the bound, within a second of it.
        const ttl = Number(seen.headers.get("Stream-TTL"));
        expect(before + ttl * 1000).toBeLessThan(latest);
        expect(after + ttl * 1000).toBeGreaterThanOrEqual(latest - 1000);
        expect(seen.headers.get("Stream-Expires-At")).toBeNull();
      }
    }
    // A window the import counted a while before the stream's object made it is counted again there.
    const late = `${path}/late`;
    const { object, request } = importedStream(late);
    expect(await object.claimImport(late, "late")).toBe(true);
    const counted = String(Math.ceil((latest - (Date.now() - 60_000)) / 1000) - 1);
    const made = await object.importFetch("late", request("PUT", { "Stream-TTL": counted }));
    expect(made.status, await made.clone().text()).toBe(201);
    await object.endImport("late");
    const ttl = Number((await call("HEAD", `/v1/stream/${late}`, { key: KEY_B })).headers.get("Stream-TTL"));
    expect(ttl).toBeLessThan(Number(counted));
    expect(Date.now() + ttl * 1000).toBeLessThan(latest);
    // A create over HTTP is still refused such an expiry.
    for (const line of far) {
      const headers: Record<string, string> =
        line.expiresAt !== null
          ? { "Stream-Expires-At": String(line.expiresAt) }
          : { "Stream-TTL": String(line.ttlSeconds) };
      const res = await call("PUT", `/v1/stream/${line.path}-again`, { key: KEY_B, body: "x", headers });
      expect(res.status, res.text).toBe(400);
    }
  });

  it("reports a stream at a path no client could reach, and writes nothing of it", async () => {
    const id = newId();
    const paths = [`unreachable-${id}/a\u0001b`, `__ds/${id}`];
    const stream = [
      { type: "export", format: "cf-tenant", version: 1, cursor: null },
      ...paths.flatMap((path) => [
        { type: "stream", path, contentType: "text/plain", ttlSeconds: null, expiresAt: null, closed: false },
        { type: "stream_append", base64: "eA==" },
        { type: "cursor", cursor: "x" },
      ]),
      { type: "end", sessions: 0, streams: 2 },
    ]
      .map((line) => JSON.stringify(line))
      .join("\n");
    const report = await importTenant(stream, KEY_B);
    expect(report.status, report.text).toBe(200);
    expect(report.body.streams).toMatchObject([
      { path: paths[0], status: "failed", error: { code: "invalid_request", line: 2 } },
      { path: paths[1], status: "failed", error: { code: "not_found", line: 5 } },
    ]);
    for (const prefix of [`unreachable-${id}`, `__ds/${id}`]) {
      const listed = await api("GET", `/v1/streams?prefix=${encodeURIComponent(prefix)}`, { key: KEY_B });
      expect(listed.body.streams).toEqual([]);
    }
  });

  it("exports a fork's inherited appends a page at a time from its source, each as it was written", async () => {
    const source = `fork-pages-${newId()}`;
    const fork = `${source}-fork`;
    await create(`/v1/stream/${source}`, { key: KEY_A, contentType: "application/json", body: '[0,"a"]' });
    for (let n = 1; n < 150; n++)
      expect((await append(`/v1/stream/${source}`, `[${n},"a"]`, JSON_TYPE, KEY_A)).status).toBe(204);
    await create(`/v1/stream/${fork}`, {
      key: KEY_A,
      contentType: "application/json",
      body: '["own",1]',
      headers: { "Stream-Forked-From": `/v1/stream/${source}` },
    });
    const objectOf = (path: string) => streamObjects().getByName(streamObjectName("tenant-a", path));
    const sourceAppends = await objectCalls(objectOf(source)).exportAppends(source, 0, 1 << 20);
    expect(sourceAppends.appends).toHaveLength(150);
    expect(sourceAppends.appends[149]).toEqual({ json: '149,"a"' });
    const forkObject = objectOf(fork);
    const counted = countingCalls(streamObjectName("tenant-a", source));
    await withObjectEnv(forkObject, { STREAMS: counted.streams }, async () => {
      const whole = await objectCalls(forkObject).exportAppends(fork, 0, 1 << 20);
      expect(whole).toEqual({ appends: [...sourceAppends.appends, { json: '"own",1' }], next: null });
      expect(counted.calls()).toBe(1);
      // In pages of about 200 bytes: the same appends, one call to the source for each page.
      const paged: unknown[] = [];
      let pages = 0;
      for (let from: number | null = 0; from !== null; pages++) {
        const page = await objectCalls(forkObject).exportAppends(fork, from, 200);
        paged.push(...page.appends);
        from = page.next;
      }
      expect(paged).toEqual(whole.appends);
      expect(pages).toBeGreaterThan(3);
      expect(counted.calls()).toBeLessThanOrEqual(1 + pages);
    });
  });

  it("restores a JSON append of one value as large as an append may be", async () => {
    const path = `large-value-${newId()}`;
    const value = { n: 1, text: "" };
    value.text = "a".repeat(MAX_APPEND_BYTES - JSON.stringify(value).length);
    const body = JSON.stringify(value);
    expect(body.length).toBe(MAX_APPEND_BYTES);
    await create(`/v1/stream/${path}`, { key: KEY_A, contentType: "application/json", body: "[1,[2]]" });
    expect((await append(`/v1/stream/${path}`, body, JSON_TYPE, KEY_A)).status).toBe(204);
    expect((await append(`/v1/stream/${path}`, "[[3]]", JSON_TYPE, KEY_A)).status).toBe(204);
    const before = await snapshot(KEY_A, [path]);

    const report = await importTenant(await exportTenant(KEY_A), KEY_B);
    expect(report.status, report.text).toBe(200);
    expect(report.body.streams.filter((stream: { path: string }) => stream.path === path)).toEqual([
      { path, status: "imported", appends: 3 },
    ]);
    expect(await snapshot(KEY_B, [path])).toEqual(before);
  });

  it("writes again a stream an import began and never finished, and no one else's", async () => {
    const path = `unfinished-${newId()}`;
    const header = (at: string) => ({
      type: "stream",
      path: at,
      contentType: "application/json",
      ttlSeconds: null,
      expiresAt: null,
      closed: true,
    });
    const exported = (at: string) =>
      [
        { type: "export", format: "cf-tenant", version: 1, cursor: null },
        header(at),
        { type: "stream_append", json: "1,2" },
        { type: "stream_append", json: "3" },
        { type: "cursor", cursor: "x" },
        { type: "end", sessions: 0, streams: 1 },
      ]
        .map((line) => JSON.stringify(line))
        .join("\n");
    // An import whose Worker went away after the stream's first append (tenant B: key-b).
    const stream = streamObjects().getByName(streamObjectName("tenant-b", path));
    const protocol = (method: string, headers: Record<string, string> = {}, body?: string) =>
      new Request(`https://streams.internal/v1/stream/${path}`, {
        method,
        headers: { ...headers, [STREAM_TENANT_HEADER]: "tenant-b", [STREAM_KEY_HEADER]: path },
        body,
      });
    const json = { "Content-Type": "application/json" };
    expect(await stream.claimImport(path, "gone")).toBe(true);
    expect((await stream.importFetch("gone", protocol("PUT", json))).status).toBe(201);
    expect((await stream.importFetch("gone", protocol("POST", json, "[1,2]"))).status).toBe(204);

    const report = await importTenant(exported(path), KEY_B);
    expect(report.status, report.text).toBe(200);
    expect(report.body.streams).toEqual([{ path, status: "imported", appends: 2 }]);
    const read = await readAll(`/v1/stream/${path}`, "-1", KEY_B);
    expect(JSON.parse(read.text)).toEqual([1, 2, 3]);
    expect((await head(`/v1/stream/${path}`, KEY_B)).closed).toBe(true);
    // The import that went away writes nothing more there, nor deletes what the other wrote.
    const late = await stream.importFetch("gone", protocol("POST", json, "[9]"));
    expect(late.status).toBe(409);
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe("already_exists");
    expect((await stream.importFetch("gone", protocol("DELETE"))).status).toBe(409);
    expect(JSON.parse((await readAll(`/v1/stream/${path}`, "-1", KEY_B)).text)).toEqual([1, 2, 3]);
    // Imported whole, it is there already for the next import, as a stream made by a writer is.
    const again = await importTenant(exported(path), KEY_B);
    expect(again.body.streams).toEqual([{ path, status: "skipped" }]);
    const written = `${path}-written`;
    await create(`/v1/stream/${written}`, { key: KEY_B, contentType: "application/json", body: "[7]" });
    const other = await importTenant(exported(written), KEY_B);
    expect(other.body.streams).toEqual([{ path: written, status: "skipped" }]);
    expect(JSON.parse((await readAll(`/v1/stream/${written}`, "-1", KEY_B)).text)).toEqual([7]);
  });

  it("takes a path a deleted stream its forks still read holds for taken, skipping or refusing it", async () => {
    const path = `held-${newId()}`;
    const exported = [
      { type: "export", format: "cf-tenant", version: 1, cursor: null },
      { type: "stream", path, contentType: "text/plain", ttlSeconds: null, expiresAt: null, closed: false },
      { type: "stream_append", base64: "eA==" },
      { type: "cursor", cursor: "x" },
      { type: "end", sessions: 0, streams: 1 },
    ]
      .map((line) => JSON.stringify(line))
      .join("\n");
    const fork = `/v1/stream/${path}-fork`;
    await create(`/v1/stream/${path}`, { key: KEY_B, body: "kept" });
    await create(fork, { key: KEY_B, headers: { "Stream-Forked-From": `/v1/stream/${path}` } });
    expect((await call("DELETE", `/v1/stream/${path}`, { key: KEY_B })).status).toBe(204);
    expect((await call("HEAD", `/v1/stream/${path}`, { key: KEY_B })).status).toBe(410);

    const skipped = await importTenant(exported, KEY_B);
    expect(skipped.status, skipped.text).toBe(200);
    expect(skipped.body.streams).toEqual([{ path, status: "skipped" }]);
    const refused = await importTenant(exported, KEY_B, "?existing=refuse");
    expect(refused.body.streams).toMatchObject([
      { path, status: "refused", error: { code: "already_exists" } },
    ]);
    // Nothing written: the path is still the deleted stream's, and its fork reads what it held.
    expect((await call("HEAD", `/v1/stream/${path}`, { key: KEY_B })).status).toBe(410);
    expect((await readAll(fork, "-1", KEY_B)).text).toBe("kept");
    expect((await call("DELETE", fork, { key: KEY_B })).status).toBe(204);
  });

  it("keeps a stream out of sight while an import writes it, and shows it whole once it is over", async () => {
    const path = `importing-${newId()}`;
    const { object, request } = importedStream(path);
    expect(await object.claimImport(path, "writing")).toBe(true);
    expect((await object.importFetch("writing", request("PUT", JSON_TYPE))).status).toBe(201);
    expect((await object.importFetch("writing", request("POST", JSON_TYPE, "[1,2]"))).status).toBe(204);

    // Every public request answers as for a stream that is not there; a create finds the path taken.
    const missing = await call("GET", `/v1/stream/${path}-none`, { key: KEY_B });
    const absent = {
      status: missing.status,
      code: missing.json.error.code,
      message: missing.json.error.message,
    };
    expect(absent).toMatchObject({ status: 404, code: "not_found" });
    const asked = [
      await call("GET", `/v1/stream/${path}?offset=-1`, { key: KEY_B }),
      await call("GET", `/v1/stream/${path}?offset=-1&live=long-poll`, { key: KEY_B }),
      await call("GET", `/v1/stream/${path}?offset=-1&live=sse`, { key: KEY_B }),
      await call("POST", `/v1/stream/${path}`, { key: KEY_B, body: "[9]", headers: JSON_TYPE }),
      await call("DELETE", `/v1/stream/${path}`, { key: KEY_B }),
    ];
    for (const res of asked)
      expect({ status: res.status, code: res.json.error.code, message: res.json.error.message }).toEqual(
        absent,
      );
    expect((await head(`/v1/stream/${path}`, KEY_B)).status).toBe(404);
    const made = await call("PUT", `/v1/stream/${path}`, { key: KEY_B, headers: JSON_TYPE });
    expect(made.status).toBe(409);
    expect(made.json.error.code).toBe("already_exists");
    const listing = () => api("GET", `/v1/streams?prefix=${path}`, { key: KEY_B });
    expect((await listing()).body.streams).toEqual([]);

    expect((await object.importFetch("writing", request("POST", JSON_TYPE, "[3]"))).status).toBe(204);
    expect((await object.importFetch("writing", request("POST", { "Stream-Closed": "true" }))).status).toBe(
      204,
    );
    await object.endImport("writing");
    expect(JSON.parse((await readAll(`/v1/stream/${path}`, "-1", KEY_B)).text)).toEqual([1, 2, 3]);
    expect((await head(`/v1/stream/${path}`, KEY_B)).closed).toBe(true);
    expect((await listing()).body.streams).toMatchObject([{ path, closed: true }]);
  });

  it("drops a stream an import left unfinished a day after it was claimed", async () => {
    const path = `abandoned-${newId()}`;
    const { object, request } = importedStream(path);
    expect(await object.claimImport(path, "gone")).toBe(true);
    expect((await object.importFetch("gone", request("PUT", JSON_TYPE))).status).toBe(201);
    expect((await object.importFetch("gone", request("POST", JSON_TYPE, "[1]"))).status).toBe(204);
    // Its alarm, come early, leaves the import alone.
    await runDurableObjectAlarm(object);
    expect((await object.importFetch("gone", request("POST", JSON_TYPE, "[2]"))).status).toBe(204);

    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 25 * 3600 * 1000);
      expect(await runDurableObjectAlarm(object)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
    // The claim is gone (the import writes nothing more), and so is the stream: a create makes it anew.
    const late = await object.importFetch("gone", request("POST", JSON_TYPE, "[3]"));
    expect(late.status).toBe(409);
    expect((await head(`/v1/stream/${path}`, KEY_B)).status).toBe(404);
    const made = await call("PUT", `/v1/stream/${path}`, { key: KEY_B, headers: JSON_TYPE, body: "[7]" });
    expect(made.status, made.text).toBe(201);
    expect(JSON.parse((await readAll(`/v1/stream/${path}`, "-1", KEY_B)).text)).toEqual([7]);
  });
});
