import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { afterEach, expect, it } from "vitest";
import { newId } from "../../src/core/ids";
import { sessionObjectName } from "../../src/durable/internal";
import { DEFAULT_SESSION_FULL_BYTES, sessionFullBytes } from "../../src/durable/session/schema";
import { faults } from "./faults";

/*
 * A session whose storage reaches its ceiling (SESSION_FULL_BYTES, set low here through the fault
 * plan's settings) takes no more entries, and stays everything else: read, exported, compacted,
 * navigated, forked, deleted and restored.
 */

afterEach(() => faults.clear());

async function api(method: string, path: string, body?: unknown) {
  const res = await exports.default.fetch(`http://sessions.test${path}`, {
    method,
    headers: { Authorization: "Bearer key-a", "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed, text };
}

const message = (text: string) => ({
  type: "message",
  message: { role: "user", content: text, timestamp: 1_700_000_000_000 },
});

it("reads its ceiling from SESSION_FULL_BYTES, below the platform's 10 GB an object", () => {
  expect(sessionFullBytes({})).toBe(DEFAULT_SESSION_FULL_BYTES);
  expect(DEFAULT_SESSION_FULL_BYTES).toBeLessThan(10_000_000_000);
  expect(sessionFullBytes({ SESSION_FULL_BYTES: "5000000" })).toBe(5_000_000);
  expect(sessionFullBytes({ SESSION_FULL_BYTES: "nonsense" })).toBe(DEFAULT_SESSION_FULL_BYTES);
  expect(sessionFullBytes({ SESSION_FULL_BYTES: "-1" })).toBe(DEFAULT_SESSION_FULL_BYTES);
});

it("refuses entries with session_full at its ceiling, writing nothing, and stays readable, exportable, compactable and forkable", async () => {
  const id = `full-${newId()}`;
  expect((await api("POST", "/v1/sessions", { id })).status).toBe(201);
  const first = await api("POST", `/v1/sessions/${id}/entries`, {
    entries: [message("first"), message("second")],
  });
  expect(first.status).toBe(201);
  const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
  const size = await runInDurableObject(stub, (_instance, state) => state.storage.sql.databaseSize);
  faults.env.SESSION_FULL_BYTES = String(size + 300_000);

  let refused: Awaited<ReturnType<typeof api>> | undefined;
  for (let i = 0; i < 40 && !refused; i++) {
    const res = await api("POST", `/v1/sessions/${id}/entries`, message(`${i} ${"x".repeat(60_000)}`));
    if (res.status !== 201) refused = res;
  }
  expect(refused?.status, refused?.text).toBe(507);
  expect(refused?.body.error).toMatchObject({
    code: "session_full",
    details: { ceiling: size + 300_000, size: expect.any(Number) },
  });
  const before = await api("GET", `/v1/sessions/${id}`);
  const entries = (await api("GET", `/v1/sessions/${id}/entries?limit=1000`)).body.entries;
  // Refused again, by an append and by a write of entries as they are: nothing changes.
  expect((await api("POST", `/v1/sessions/${id}/entries`, message("one more"))).status).toBe(507);
  const copy = {
    ...message("copied"),
    id: "copied",
    parentId: entries.at(-1).id,
    timestamp: "2026-01-01T00:00:00.000Z",
  };
  const imported = await api("POST", `/v1/sessions/${id}/import`, { entries: [copy] });
  expect(imported.status).toBe(507);
  expect(imported.body.error.code).toBe("session_full");
  expect((await api("GET", `/v1/sessions/${id}`)).body).toEqual(before.body);
  expect((await api("GET", `/v1/sessions/${id}/entries?limit=1000`)).body.entries).toEqual(entries);

  // Everything else still works.
  expect((await api("GET", `/v1/sessions/${id}/context`)).body.messages).toHaveLength(entries.length);
  const exported = await api("GET", `/v1/sessions/${id}/export`);
  expect(exported.status).toBe(200);
  expect(exported.text.trim().split("\n")).toHaveLength(entries.length + 1);
  const compacted = await api("POST", `/v1/sessions/${id}/compact`, {
    summary: "the story so far",
    keepRecentTokens: 0,
  });
  expect(compacted.status, compacted.text).toBe(201);
  expect((await api("GET", `/v1/sessions/${id}/context`)).body.messages[0].role).toBe("compactionSummary");
  expect((await api("PUT", `/v1/sessions/${id}/leaf`, { targetId: entries[0].id })).status).toBe(200);
  const fork = await api("POST", `/v1/sessions/${id}/fork`, { entryId: entries[1].id });
  expect(fork.status, fork.text).toBe(201);
  expect(fork.body.entryCount).toBe(2);
  expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
  expect((await api("POST", `/v1/sessions/${id}/restore`, {})).status).toBe(200);

  // An answer cannot start in a full session either; nothing is opened.
  const generation = await api("POST", `/v1/sessions/${id}/generations`, { format: "text" });
  expect(generation.status, generation.text).toBe(507);
  expect(generation.body.error.code).toBe("session_full");
  expect((await api("GET", `/v1/sessions/${id}/generations`)).body.generations).toEqual([]);

  // Given room, it takes entries again.
  faults.env.SESSION_FULL_BYTES = String(10 * size + 10_000_000);
  expect((await api("POST", `/v1/sessions/${id}/entries`, message("room again"))).status).toBe(201);
});
