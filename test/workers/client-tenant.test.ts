import { exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createClient } from "../../src/client";
import { SessionError } from "../../src/core/errors";
import { assistant, user } from "../conformance/fixtures";
import { KEY_A, KEY_B, sid } from "./helpers";

/*
 * The client's search, recovery and backup calls against the worker: the same answers as the HTTP
 * API, as typed values and SessionErrors.
 */

const client = (token: string) =>
  createClient({
    baseUrl: "http://sessions.test",
    token,
    fetch: (request) => exports.default.fetch(request),
  });

describe("client: search, recovery, backup", () => {
  it("searches a session and the tenant", async () => {
    const repo = client(KEY_A);
    const session = await repo.create({ id: sid(), name: "Heron survey" });
    const q = await session.appendMessage(user("count the herons at dawn"));
    await session.appendMessage(assistant("eleven herons, thinking aside"));
    const page = await session.search("heron", { limit: 1 });
    expect(page.hits).toHaveLength(1);
    expect(page.nextCursor).not.toBeNull();
    const next = await session.search("heron", { limit: 1, cursor: page.nextCursor as string });
    expect(next.hits.map((h) => h.entryId)).toEqual([q]);
    expect((await session.search("heron", { thinking: true })).hits).toHaveLength(2);
    await vi.waitFor(
      async () => {
        const { results } = await repo.search("heron");
        expect(results[0]?.session.id).toBe(session.id);
        expect(results[0]?.matches.map((m) => m.field)).toEqual(["name", "preview", "text"]);
      },
      { timeout: 5000, interval: 30 },
    );
    expect((await repo.search("heron", { prefix: session.id })).results).toHaveLength(1);
    expect((await repo.search("heron", { prefix: `${session.id}-other` })).results).toEqual([]);
    await expect(session.search("!!!")).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("deletes, restores and purges", async () => {
    const repo = client(KEY_A);
    const session = await repo.create({ id: sid() });
    await session.appendMessage(user("keep me"));
    await repo.delete(session.id);
    await expect(repo.open(session.id)).rejects.toBeInstanceOf(SessionError);
    const info = await repo.restore(session.id);
    expect(info.entryCount).toBe(1);
    await repo.purge(session.id);
    await expect(repo.restore(session.id)).rejects.toMatchObject({ code: "not_found" });
  });

  it("exports a tenant and imports it into another, and sets retention", async () => {
    const a = client(KEY_A);
    const b = client(KEY_B);
    const session = await a.create({
      id: sid("backup"),
      name: "to copy",
      expiresAt: "2099-01-01T00:00:00.000Z",
    });
    await session.appendMessage(user("copied word for word"));
    let text = "";
    for await (const line of a.exportTenant()) text += line;
    expect(text.endsWith('"type":"end","sessions":')).toBe(false);
    expect(JSON.parse(text.trimEnd().split("\n").at(-1) as string).type).toBe("end");
    const report = await b.importTenant(text);
    expect(report.failed).toBe(0);
    const copy = await b.open(session.id);
    const { version: _copied, ...copied } = (await copy.buildContext()) as { version?: string };
    const { version: _original, ...original } = (await session.buildContext()) as { version?: string };
    expect(copied).toEqual(original);
    expect((await copy.getInfo()).expiresAt).toBe("2099-01-01T00:00:00.000Z");
    expect((await b.importTenant(text)).skipped).toBe(report.imported);
    expect(await b.setRetention(90)).toEqual({ idleDays: 90 });
    expect(await b.retention()).toEqual({ idleDays: 90 });
    expect(await b.setRetention(null)).toEqual({ idleDays: null });
  });
});

/**
 * A client whose tenant event streams each end after `lifetimeMs`, as when a directory shard
 * restarts, and the waits between one stream's end and the next's opening.
 */
function cutEventStreams(lifetimeMs: number) {
  const opened: number[] = [];
  const ended: number[] = [];
  const repo = createClient({
    baseUrl: "http://sessions.test",
    token: KEY_A,
    fetch: async (request) => {
      if (new URL(request.url).pathname !== "/v1/events") return exports.default.fetch(request);
      opened.push(Date.now());
      const response = await exports.default.fetch(request);
      const upstream = response.body as ReadableStream<Uint8Array>;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          timer = setTimeout(() => {
            void upstream.cancel();
            ended.push(Date.now());
            controller.close();
          }, lifetimeMs);
        },
        cancel() {
          if (timer !== undefined) clearTimeout(timer);
          void upstream.cancel();
        },
      });
      return new Response(body, { headers: response.headers });
    },
  });
  /** Watches until `connections` streams were opened; answers the waits between them. */
  async function watch(connections: number, retryDelayMs: number): Promise<number[]> {
    const stop = new AbortController();
    const watching = (async () => {
      for await (const _ of repo.watch({ signal: stop.signal, retryDelayMs })) {
      }
    })();
    await vi.waitFor(() => expect(opened.length).toBeGreaterThanOrEqual(connections), {
      timeout: 20_000,
      interval: 5,
    });
    stop.abort();
    await watching;
    return opened.slice(1, connections).map((at, i) => at - (ended[i] as number));
  }
  return { watch };
}

describe("client: the tenant's events", () => {
  it("reconnects after the base delay when each connection stayed open a while", async () => {
    const waits = await cutEventStreams(80).watch(7, 10);
    expect(waits).toHaveLength(6);
    // Backing off would have waited 10, 20, 40, 80, 160 and 320 ms.
    for (const wait of waits) expect(wait).toBeLessThan(120);
  });

  it("backs off while each connection ends as soon as it opens", async () => {
    const waits = await cutEventStreams(0).watch(5, 30);
    expect(waits).toHaveLength(4);
    waits.forEach((wait, i) => {
      expect(wait).toBeGreaterThanOrEqual(30 * 2 ** i - 1);
    });
  });
});
