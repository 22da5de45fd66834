import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { newId } from "../../src/core/ids";
import { sessionObjectName, tenantHash, writeMetric } from "../../src/durable/internal";
import type { WorkerEnv } from "../../src/http/env";
import worker from "../../src/worker";
import {
  api,
  createSession,
  directoryReplacing,
  expectError,
  KEY_A,
  runAlarmOnceReportDue,
  sid,
  userMessage,
  withObjectEnv,
} from "./helpers";

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

/** A dataset that keeps what is written to it, in place of the Analytics Engine binding. */
function recordingDataset() {
  const points: AnalyticsEngineDataPoint[] = [];
  const dataset: AnalyticsEngineDataset = { writeDataPoint: (point) => void points.push(point ?? {}) };
  const of = (kind: string) => points.filter((point) => point.blobs?.[0] === kind);
  return { points, dataset, of };
}

/** Calls the Worker with `extra` bindings on top of the test environment, as tenant A. */
async function call(
  extra: Partial<WorkerEnv>,
  method: string,
  path: string,
  options: { body?: unknown; raw?: string; type?: string; key?: string | null } = {},
) {
  const headers: Record<string, string> = {};
  const key = options.key === undefined ? KEY_A : options.key;
  if (key !== null) headers.Authorization = `Bearer ${key}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["Content-Type"] = options.type ?? "application/json";
  const res = await worker.fetch(
    new Request(`http://sessions.test${path}`, { method, headers, body }),
    { ...env, ...extra } as WorkerEnv,
    ctx(),
  );
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

describe("metrics with the METRICS binding", () => {
  it("writes a data point per request: route, method, status class, error code, duration, sizes", async () => {
    const { dataset, of } = recordingDataset();
    const id = sid();
    const created = await call({ METRICS: dataset }, "POST", "/v1/sessions", { body: { id } });
    expect(created.status).toBe(201);
    const appended = await call({ METRICS: dataset }, "POST", `/v1/sessions/${id}/entries`, {
      body: userMessage("hello"),
    });
    expect(appended.status).toBe(201);
    expect((await call({ METRICS: dataset }, "GET", `/v1/sessions/${sid("missing")}`)).status).toBe(404);
    expect((await call({ METRICS: dataset }, "GET", "/v1/sessions", { key: null })).status).toBe(401);

    const tenant = await tenantHash("tenant-a");
    const requests = of("request");
    expect(requests.map((point) => point.blobs)).toEqual([
      ["request", "/v1/sessions", "POST", "2xx", ""],
      ["request", "/v1/sessions/:sid/entries", "POST", "2xx", ""],
      ["request", "/v1/sessions/:sid", "GET", "4xx", "not_found"],
      ["request", "/v1/sessions", "GET", "4xx", "unauthorized"],
    ]);
    expect(requests.map((point) => point.indexes)).toEqual([[tenant], [tenant], [tenant], ["-"]]);
    const [, append] = requests;
    expect(append?.doubles).toEqual([
      expect.any(Number),
      new TextEncoder().encode(JSON.stringify(userMessage("hello"))).byteLength,
      new TextEncoder().encode(appended.text).byteLength,
      201,
    ]);
  });

  it("writes the Worker's domain events: forks, imports, compactions and their summarizer calls", async () => {
    const { dataset, of } = recordingDataset();
    const summarizing = (model: string): Partial<WorkerEnv> => ({
      METRICS: dataset,
      SUMMARIZER_BASE_URL: `${env.FAKE_LLM_URL}/v1`,
      SUMMARIZER_MODEL: model,
      SUMMARIZER_API_KEY: "test-key",
    });
    const id = await createSession();
    const batch = Array.from({ length: 12 }, (_, i) => userMessage(`turn ${i} ${"words ".repeat(60)}`));
    const appended = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: batch } });
    const lastId = appended.body.leafId as string;

    const forkId = sid("fork");
    const forked = await call({ METRICS: dataset }, "POST", `/v1/sessions/${id}/fork`, {
      body: { entryId: lastId, id: forkId },
    });
    expect(forked.status).toBe(201);
    expect(of("fork").map((point) => [point.blobs, point.doubles?.slice(0, 2)])).toEqual([
      [
        ["fork", forkId, id],
        [forked.json.entryCount, forked.json.bytes],
      ],
    ]);

    const file = (await api("GET", `/v1/sessions/${id}/export?format=pi`)).text;
    const imported = await call({ METRICS: dataset }, "POST", "/v1/sessions/import?format=pi", {
      raw: file,
      type: "application/x-ndjson",
    });
    expect(imported.status).toBe(201);
    expect(
      of("import").map((point) => [point.blobs, point.doubles?.slice(0, 2), point.doubles?.[3]]),
    ).toEqual([[["import", imported.json.id, "pi"], [imported.json.entryCount, imported.json.bytes], 0]]);

    const failed = await call(summarizing("fail"), "POST", `/v1/sessions/${id}/compact`, {
      body: { keepRecentTokens: 100 },
    });
    expect(failed.status).toBe(502);
    const compacted = await call(summarizing("ok"), "POST", `/v1/sessions/${id}/compact`, {
      body: { keepRecentTokens: 100 },
    });
    expect(compacted.status).toBe(201);
    expect(of("compaction").map((point) => point.blobs)).toEqual([
      ["compaction", id, "manual", "summarizer_failed"],
      ["compaction", id, "manual", "ok"],
    ]);
    expect(of("summary").map((point) => point.blobs)).toEqual([
      ["summary", id, "openai-compatible", "failed"],
      ["summary", id, "openai-compatible", "ok"],
    ]);
    for (const point of [...of("compaction"), ...of("summary")]) {
      expect(point.doubles?.[0]).toBeGreaterThanOrEqual(0);
    }
  });

  it("writes the events of a session's object: appends, contexts sent, watchers, storage reports, deletion", async () => {
    const { dataset, of } = recordingDataset();
    const id = await createSession();
    await runInDurableObject(env.SESSIONS.getByName(sessionObjectName("tenant-a", id)), (instance) => {
      const object = instance as unknown as { env: WorkerEnv };
      object.env = { ...object.env, METRICS: dataset };
    });
    const before = (await api("GET", `/v1/sessions/${id}`)).body.bytes as number;
    const appended = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("one"), userMessage("two")] },
    });
    expect(appended.status).toBe(201);
    const after = (await api("GET", `/v1/sessions/${id}`)).body;
    expect(of("append").map((point) => [point.blobs, point.doubles])).toEqual([
      [
        ["append", id],
        [2, after.bytes - before],
      ],
    ]);
    // A replay writes nothing, and is not counted.
    await api("POST", `/v1/sessions/${id}/entries`, { body: appended.body.entries[0] });
    expect(of("append").length).toBe(1);

    const context = await api("GET", `/v1/sessions/${id}/context`);
    await vi.waitFor(() => expect(of("context").length).toBe(1));
    expect(of("context")[0]?.blobs).toEqual(["context", id, expect.stringMatching(/^(kept|built)$/)]);
    expect(of("context")[0]?.doubles?.[0]).toBe(new TextEncoder().encode(context.text).byteLength);

    // A watcher: its transport, and how many the session has with it.
    const watching = await worker.fetch(
      new Request(`http://sessions.test/v1/sessions/${id}/events`, {
        headers: { Authorization: `Bearer ${KEY_A}` },
      }),
      env as WorkerEnv,
      ctx(),
    );
    expect(watching.status).toBe(200);
    await vi.waitFor(() => expect(of("watcher").length).toBe(1));
    expect(of("watcher")[0]?.blobs).toEqual(["watcher", id, "sse"]);
    expect(of("watcher")[0]?.doubles).toEqual([1]);
    await watching.body?.cancel();

    await vi.waitFor(() => expect(of("storage").at(-1)?.doubles).toEqual([after.bytes, after.entryCount]), {
      timeout: 10_000,
      interval: 50,
    });
    expect(of("storage").at(-1)?.blobs).toEqual(["storage", id]);
    expect(of("storage").at(-1)?.indexes).toEqual([await tenantHash("tenant-a")]);

    // A deleted session keeps its data until its recovery window closes; a purge frees it.
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
    expect(of("storage").at(-1)?.doubles).toEqual([0, 0]);
  });
});

describe("the storage point of a purged session", () => {
  it("is 0 once its storage is gone, not while its purge waits for the tenant's ledger", async () => {
    const { dataset, of } = recordingDataset();
    const id = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const stored = () =>
      runInDurableObject(
        stub,
        (_instance, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master").one().n,
      );
    // The tenant's ledger cannot take the session's blob claims back: the purge waits, its data kept.
    const unreachable = directoryReplacing("releaseBlobs", () =>
      Promise.reject(new Error("the directory cannot be reached")),
    );
    const written = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("kept a while") });
    expect(written.status).toBe(201);
    // The writes' report (and its storage point) is made before the points are recorded: only the
    // purge's are.
    await runAlarmOnceReportDue(stub);
    await withObjectEnv(stub, { METRICS: dataset }, async () => {
      await withObjectEnv(stub, { DIRECTORY: unreachable }, async () => {
        expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
      });
      expect(await stored()).toBeGreaterThan(0);
      expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
      expect(of("storage").filter((point) => point.doubles?.[0] === 0)).toEqual([]);
      // Its alarm finishes the purge: the point says so then (written just after the storage goes,
      // while the binding is still the recording one).
      for (let tries = 0; (await stored()) > 0; tries++) {
        expect(tries).toBeLessThan(50);
        await runDurableObjectAlarm(stub);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await expect.poll(() => of("storage").at(-1)?.doubles).toEqual([0, 0]);
    });
    expect(of("storage").at(-1)).toMatchObject({ blobs: ["storage", id], doubles: [0, 0] });
    expect(of("storage").at(-1)?.indexes).toEqual([await tenantHash("tenant-a")]);
  });
});

describe("metrics without the binding", () => {
  it("writes nothing and fails nothing; a failing binding fails no request either", async () => {
    expect(() =>
      writeMetric(undefined, "-", { kind: "storage", sessionId: "x", entries: 1, bytes: 1 }),
    ).not.toThrow();
    const id = sid();
    expect((await call({ METRICS: undefined }, "POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const broken: AnalyticsEngineDataset = {
      writeDataPoint() {
        throw new Error("dataset unavailable");
      },
    };
    const appended = await call({ METRICS: broken }, "POST", `/v1/sessions/${id}/entries`, {
      body: userMessage(`kept ${newId()}`),
    });
    expect(appended.status).toBe(201);
    expect((await api("GET", `/v1/sessions/${id}`)).body.entryCount).toBe(1);
    expect(errors.mock.calls.some(([line]) => String(line).includes('"type":"metrics"'))).toBe(true);
    errors.mockRestore();
  });
});
