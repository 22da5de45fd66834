import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import { api, createSession, info, KEY_B, sid, userMessage } from "./helpers";

describe("durability", () => {
  it("keeps entries and the leaf when every object is reset", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { ...userMessage("a"), id: "a" },
          { ...userMessage("b"), id: "b" },
        ],
      },
    });
    await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "a" } });
    await abortAllDurableObjects();
    const after = await info(id);
    expect(after).toMatchObject({ leafId: "a", entryCount: 2 });
    const next = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("c") });
    expect(next.body.entries[0]).toMatchObject({ parentId: "a", seq: 4 });
  });

  it("leaves no half-written batch when a write fails inside the transaction", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: { ...userMessage("first"), id: "first" } });
    const before = await info(id);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    // A row squatting on the seq the batch's second entry will take makes SQLite fail mid-batch.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec(
        "INSERT INTO entries (seq, id, type, timestamp, body) VALUES (3, 'squatter', 'custom', '2026-01-01T00:00:00Z', '{}')",
      );
    });
    const failed = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("x"), userMessage("y")] },
    });
    expect(failed.status).toBe(500);
    expect(failed.body.error.code).toBe("internal");
    const rows = await runInDurableObject(stub, (_instance, state) => {
      const count = state.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM entries WHERE id != 'squatter'")
        .one().n;
      state.storage.sql.exec("DELETE FROM entries WHERE id = 'squatter'");
      return count;
    });
    expect(rows).toBe(1);
    expect(await info(id)).toEqual(before);
    // Nothing of the failed batch remains in memory either: the next append goes under the first
    // entry, at a seq of its own (memory was read again from storage, squatter and all).
    const next = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { ...userMessage("after"), id: "after" },
    });
    expect(next.status).toBe(201);
    expect(next.body.entries[0].parentId).toBe("first");
    expect(next.body.entries[0].seq).toBeGreaterThan(1);
    const stored = await api("GET", `/v1/sessions/${id}/entries`);
    expect(stored.body.entries.map((entry: { id: string }) => entry.id)).toEqual(["first", "after"]);
  });
});

describe("concurrency", () => {
  it("lets exactly one of many clients holding the same ETag win", async () => {
    const id = await createSession();
    const { leafId } = (await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("q") })).body;
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api("POST", `/v1/sessions/${id}/entries`, {
          body: userMessage(`answer ${i}`),
          headers: { "If-Match": `"${leafId}"` },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 201).length).toBe(1);
    expect(results.filter((r) => r.status === 412).length).toBe(11);
    expect((await info(id)).entryCount).toBe(2);
  });

  it("keeps many sessions of two tenants apart while all are written at once", async () => {
    const sessions = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const key = i % 2 ? KEY_B : undefined;
        const id = sid(`c${i}`);
        const res = await api("POST", "/v1/sessions", { key, body: { id } });
        expect(res.status).toBe(201);
        return { id, key };
      }),
    );
    await Promise.all(
      sessions.flatMap(({ id, key }) =>
        Array.from({ length: 10 }, (_, n) =>
          api("POST", `/v1/sessions/${id}/entries`, { key, body: userMessage(`${id}:${n}`) }),
        ),
      ),
    );
    for (const { id, key } of sessions) {
      const page = await api("GET", `/v1/sessions/${id}/entries?limit=1000`, { key });
      const texts = page.body.entries.map((e: { message: { content: string } }) => e.message.content);
      expect(page.body.entries.map((e: { seq: number }) => e.seq)).toEqual(
        Array.from({ length: 10 }, (_, n) => n + 1),
      );
      expect(texts.every((t: string) => t.startsWith(`${id}:`))).toBe(true);
      expect(new Set(texts).size).toBe(10);
    }
  });
});
