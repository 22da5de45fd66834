import { describe, expect, it } from "vitest";
import { api, KEY_A, KEY_B } from "./helpers";

const withoutVersion = (context: string) => context.replace(/"version":"[^"]*",?/, "");

/*
 * Backup and restore of a whole tenant at scale: 1,000 sessions and one of 100,000 entries go out
 * as one stream (GET /v1/export) and come back into another tenant (POST /v1/import); every
 * session's export and context are then compared byte for byte (a context's version aside: it
 * names the life of its session). No request keeps an object busy
 * for long: exports read pages, imports write batches of at most 500 entries.
 */

const SMALL_SESSIONS = 1000;
const BIG_ENTRIES = 100_000;
const PARALLEL = 8;

/** Runs `work` on every item, `PARALLEL` at a time. */
async function each<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

function nativeFile(id: string, i: number): string {
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
  const lines = [
    { type: "session", format: "cf-session", version: 1, id, createdAt: at(i % 60), name: `session ${i}` },
    {
      type: "message",
      id: "q",
      parentId: null,
      timestamp: at(1),
      message: { role: "user", content: `question ${i}`, timestamp: 1 },
    },
    {
      type: "message",
      id: "a",
      parentId: "q",
      timestamp: at(2),
      message: {
        role: "assistant",
        content: [{ type: "text", text: `answer ${i}` }],
        api: "openai-completions",
        provider: "openai",
        model: "gpt-4o",
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
        stopReason: "stop",
        timestamp: 2,
      },
    },
    { type: "label", id: "l", parentId: "a", timestamp: at(3), targetId: "q", label: `label ${i}` },
  ];
  return `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`;
}

const message = (i: number) =>
  i % 2 === 0
    ? { role: "user", content: `user message ${i} with a few words`, timestamp: i }
    : {
        role: "assistant",
        content: [{ type: "text", text: `assistant message ${i}` }],
        api: "openai-completions",
        provider: "openai",
        model: "gpt-4o",
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 },
        stopReason: "stop",
        timestamp: i,
      };

describe("tenant backup at scale", () => {
  it("restores 1,000 sessions and one of 100,000 entries, every export and context byte-equal", async () => {
    const timings: Record<string, number> = {};
    let started = Date.now();
    const ids = Array.from({ length: SMALL_SESSIONS }, (_, i) => `small-${String(i).padStart(4, "0")}`);
    await each(ids, async (id) => {
      const res = await api("POST", "/v1/sessions/import", {
        raw: nativeFile(id, Number(id.slice(6))),
        headers: { "Content-Type": "application/x-ndjson" },
      });
      expect(res.status, res.text).toBe(201);
    });
    const big = "big";
    expect((await api("POST", "/v1/sessions", { body: { id: big, name: "the big one" } })).status).toBe(201);
    for (let i = 0; i < BIG_ENTRIES; i += 1000) {
      const entries = Array.from({ length: 1000 }, (_, j) => ({
        type: "message",
        id: `e${i + j}`,
        message: message(i + j),
      }));
      // A branch and a label on the way, so the tree is more than a chain.
      if (i === 50_000)
        entries[0] = { type: "message", id: `e${i}`, parentId: "e100", message: message(i) } as never;
      expect((await api("POST", `/v1/sessions/${big}/entries`, { body: { entries } })).status).toBe(201);
    }
    await api("POST", `/v1/sessions/${big}/entries`, {
      body: { type: "label", targetId: "e7", label: "early" },
    });
    timings.fill = Date.now() - started;

    started = Date.now();
    const backup = await api("GET", "/v1/export", { key: KEY_A });
    expect(backup.status).toBe(200);
    timings.export = Date.now() - started;
    const last = JSON.parse(backup.text.trimEnd().slice(backup.text.trimEnd().lastIndexOf("\n") + 1));
    expect(last).toEqual({ type: "end", sessions: SMALL_SESSIONS + 1 });

    started = Date.now();
    const restored = await api("POST", "/v1/import", {
      key: KEY_B,
      raw: backup.text,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    timings.import = Date.now() - started;
    expect(restored.status, restored.text.slice(0, 500)).toBe(200);
    expect(restored.body).toMatchObject({ imported: SMALL_SESSIONS + 1, skipped: 0, refused: 0, failed: 0 });
    expect(restored.body.sessions.find((s: { id: string }) => s.id === big)).toEqual({
      id: big,
      status: "imported",
      entries: BIG_ENTRIES + 1,
    });

    started = Date.now();
    await each([...ids, big], async (id) => {
      for (const path of [`/v1/sessions/${id}/export`, `/v1/sessions/${id}/context`]) {
        const a = await api("GET", path, { key: KEY_A });
        const b = await api("GET", path, { key: KEY_B });
        expect(a.status).toBe(200);
        expect(b.status).toBe(200);
        // A context's version names the life of its session: each tenant's copy has its own.
        if (withoutVersion(b.text) !== withoutVersion(a.text))
          expect.fail(`${path} differs between the tenants`);
      }
    });
    timings.compare = Date.now() - started;
    const listed = await api("GET", "/v1/sessions?limit=1&order=created", { key: KEY_B });
    expect(listed.body.sessions).toHaveLength(1);
    console.log("tenant backup at scale, ms:", JSON.stringify(timings));
  }, 600_000);
});
