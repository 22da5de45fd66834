import {
  abortAllDurableObjects,
  evictDurableObject,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/names";
import { watchEvents } from "./events-helpers";
import {
  api,
  assistantMessage,
  createSession,
  directoryReplacing,
  expectError,
  info,
  runAlarmOnceReportDue,
  sid,
  userMessage,
  withObjectEnv,
} from "./helpers";

/*
 * A fork answers as soon as it holds its path's first page; its object copies the rest from the
 * source's in the background. The suite copies in pages of 2 KiB and sets no alarm for the copy
 * (see vitest.workers.config.ts; an alarm the object sets for other work copies a step of two
 * pages): each fork here is read, written and outlived by its source in the middle of its copy,
 * and must answer as the complete copy would (the source's path at the fork point), lose nothing
 * and end whole.
 */

type Entry = { id: string; seq: number; type: string; parentId: string | null; [k: string]: unknown };

const objectOf = (id: string) => env.SESSIONS.getByName(sessionObjectName("tenant-a", id));

const text = (n: number) => `message ${n} ${"lorem ipsum dolor sit amet ".repeat(6)}`;

async function append(id: string, entries: unknown[]): Promise<void> {
  const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
  expect(res.status, res.text).toBe(201);
}

async function moveLeaf(id: string, leafId: string): Promise<void> {
  const res = await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: leafId } });
  expect(res.status, res.text).toBe(200);
}

/**
 * A source of some sixty entries on its main path (about 20 KiB, so a fork's first page holds only
 * its tail): a thinking level and a name on the path, labels set on it and one set from another
 * branch (which a fork re-creates), that branch, and entries after the fork point `m40`.
 */
async function source(): Promise<string> {
  const id = await createSession();
  await append(id, [
    { type: "thinking_level_change", id: "t0", thinkingLevel: "high" },
    { ...userMessage(`the goal ${text(0)}`), id: "m0" },
  ]);
  const turns = (from: number, to: number, prefix = "m") =>
    Array.from({ length: to - from }, (_, k) => {
      const n = from + k;
      return { ...(n % 2 ? assistantMessage(text(n)) : userMessage(text(n))), id: `${prefix}${n}` };
    });
  await append(id, turns(1, 11));
  await append(id, [
    { type: "label", targetId: "m5", label: "five" },
    { type: "session_info", name: "the source" },
  ]);
  await append(id, turns(11, 31));
  await moveLeaf(id, "m20");
  await append(id, [...turns(21, 26, "b"), { type: "label", targetId: "m7", label: "set elsewhere" }]);
  await moveLeaf(id, "m30");
  await append(id, turns(31, 46));
  return id;
}

/** Forks `source` at `entryId`: the answer, whose path is still being copied. */
async function fork(
  sourceId: string,
  entryId = "m40",
  id = sid("fork"),
): Promise<{ id: string; answer: any }> {
  const res = await api("POST", `/v1/sessions/${sourceId}/fork`, { body: { entryId, id } });
  expect(res.status, res.text).toBe(201);
  return { id, answer: res.body };
}

/** Runs a fork's alarm until its copy is done. */
async function finish(id: string): Promise<void> {
  for (let step = 0; (await info(id)).copying !== undefined; step++) {
    expect(step).toBeLessThan(100);
    await runDurableObjectAlarm(objectOf(id));
  }
}

async function copying(id: string): Promise<{ entries: number; copied: number }> {
  const { copying } = await info(id);
  expect(copying, `${id} is still copying`).toBeDefined();
  return copying as { entries: number; copied: number };
}

const branchOf = async (id: string, leafId?: string): Promise<Entry[]> =>
  (await api("GET", `/v1/sessions/${id}/branch${leafId ? `?leafId=${leafId}` : ""}`)).body.entries;

const entriesOf = async (id: string): Promise<Entry[]> =>
  (await api("GET", `/v1/sessions/${id}/entries?limit=1000`)).body.entries;

/** The labels a tree shows, by entry. */
function treeLabels(roots: any[]): Map<string, string | undefined> {
  const labels = new Map<string, string | undefined>();
  for (const stack = [...roots]; stack.length > 0; ) {
    const node = stack.pop();
    labels.set(node.id, node.label);
    stack.push(...node.children);
  }
  return labels;
}

describe("a fork answers before its path is copied", () => {
  it("with what it holds, and how far its copy is", async () => {
    const src = await source();
    const path = await branchOf(src, "m40");
    const { id, answer } = await fork(src);
    expect(answer.copying.entries).toBe(path.length);
    expect(answer.copying.copied).toBeGreaterThan(0);
    expect(answer.copying.copied).toBeLessThan(path.length);
    expect(answer).toMatchObject({
      leafId: "m40",
      name: "the source",
      parentSession: { id: src, entryId: "m40" },
    });
    // Its figures are the whole path's (and the label it re-creates) from the first moment.
    await finish(id);
    const done = await info(id);
    expect(done.copying).toBeUndefined();
    const { copying: _, updatedAt: __, ...answered } = answer;
    const { updatedAt: ___, ...whole } = done;
    expect(answered).toEqual(whole);
    expect(done.entryCount).toBe(path.length + 1);
    expect(done.preview).toBe((await info(src)).preview);
  });

  it("reads its path, context and entries as the source's path at the fork point", async () => {
    const src = await source();
    const path = await branchOf(src, "m40");
    const sourceContext = (await api("GET", `/v1/sessions/${src}/context?leafId=m40`)).body;

    let { id } = await fork(src);
    await copying(id);
    expect(await branchOf(id)).toEqual(path);

    ({ id } = await fork(src));
    await copying(id);
    const { version: _, ...context } = (await api("GET", `/v1/sessions/${id}/context`)).body;
    const { version: __, ...expected } = sourceContext;
    expect(context).toEqual(expected);
    expect(context.thinkingLevel).toBe("high");

    ({ id } = await fork(src));
    await copying(id);
    const entries = await entriesOf(id);
    expect(entries.slice(0, path.length)).toEqual(path);
    // Then what the fork adds: the label set on another branch, under the fork point, and the head back there.
    expect(entries.slice(path.length).map((e) => [e.type, e.targetId])).toEqual([
      ["label", "m7"],
      ["leaf", "m40"],
    ]);

    ({ id } = await fork(src));
    await copying(id);
    const lines = (await api("GET", `/v1/sessions/${id}/export`)).text.trim().split("\n");
    expect(JSON.parse(lines[0] as string)).toMatchObject({ id, parentSession: { id: src, entryId: "m40" } });
    expect(lines.slice(1).map((line) => JSON.parse(line))).toEqual(
      (await entriesOf(id)).map(({ seq: _, ...entry }) => entry),
    );
    expect(lines.slice(1, path.length + 1).map((line) => JSON.parse(line))).toEqual(
      path.map(({ seq: _, ...entry }) => entry),
    );

    ({ id } = await fork(src));
    await copying(id);
    expect((await api("GET", `/v1/sessions/${id}/entries/t0`)).body).toEqual(path[0]);
    expectError(await api("GET", `/v1/sessions/${id}/entries/b22`), 404, "not_found");
    // An entry of the part still to copy is read from the source: the copy did not have to end.
    await copying(id);
  });

  it("reads its tree, labels, search, events and history as the source's path at the fork point", async () => {
    const src = await source();
    const path = await branchOf(src, "m40");
    const sourceLabels = treeLabels((await api("GET", `/v1/sessions/${src}/tree`)).body.roots);

    let { id } = await fork(src);
    await copying(id);
    const labels = treeLabels((await api("GET", `/v1/sessions/${id}/tree`)).body.roots);
    for (const entry of path) expect(labels.get(entry.id), entry.id).toBe(sourceLabels.get(entry.id));
    expect(labels.get("m7")).toBe("set elsewhere");
    expect(labels.has("b22")).toBe(false);

    ({ id } = await fork(src));
    await copying(id);
    const hits = (await api("GET", `/v1/sessions/${id}/search?q=lorem&limit=100`)).body.hits;
    const onPath = path.filter((e) => e.type === "message").map((e) => e.id);
    expect(hits.map((h: { entryId: string }) => h.entryId).sort()).toEqual(onPath.sort());
    expect(hits.every((h: { onBranch: boolean }) => h.onBranch)).toBe(true);

    ({ id } = await fork(src));
    await copying(id);
    const watch = await watchEvents(id, { after: 0 });
    const replay = await watch.until((e) => e.event === "leaf");
    await watch.close();
    const replayed = replay.filter((e) => e.event === "entry").map((e) => e.data.id);
    expect(replayed).toEqual((await entriesOf(id)).map((e) => e.id));

    ({ id } = await fork(src));
    await copying(id);
    const now = new Date().toISOString();
    expect((await api("GET", `/v1/sessions/${id}/leaf?asOf=${now}`)).body.leafId).toBe("m40");
  });
});

describe("a fork of a compacted path", () => {
  it("reads its context at once from what it holds, its copy still going", async () => {
    const src = await createSession();
    await append(
      src,
      Array.from({ length: 60 }, (_, n) => ({
        ...(n % 2 ? assistantMessage(text(n)) : userMessage(text(n))),
        id: `m${n}`,
      })),
    );
    await append(src, [
      {
        type: "compaction",
        id: "c",
        summary: "what came before",
        tokensBefore: 9000,
        firstKeptEntryId: "m54",
      },
      { ...userMessage("after the compaction"), id: "a" },
    ]);
    const expected = (await api("GET", `/v1/sessions/${src}/context?leafId=a`)).body;
    const { id } = await fork(src, "a");
    await copying(id);
    const { version: _, ...context } = (await api("GET", `/v1/sessions/${id}/context`)).body;
    const { version: __, ...fromSource } = expected;
    expect(context).toEqual(fromSource);
    expect(context.messages).toHaveLength(8);
    // It copied what the compaction keeps (from m54 on), not the path above it.
    const read = await copying(id);
    expect(read.copied).toBeLessThan(20);
    // And an agent's turn on it: append, then the context again, needing nothing more.
    await append(id, [{ ...assistantMessage("the fork answers"), id: "r" }]);
    const after = (await api("GET", `/v1/sessions/${id}/context`)).body;
    expect(after.messages).toHaveLength(9);
    await copying(id);
    await finish(id);
    expect((await api("GET", `/v1/sessions/${id}/context`)).body).toEqual(after);
  });
});

describe("a fork still copying its path", () => {
  it("takes appends at once, under its head and under an entry still to copy", async () => {
    const src = await source();
    const { id } = await fork(src);
    await copying(id);
    await append(id, [{ ...userMessage("the fork goes on"), id: "f1" }, assistantMessage("and answers")]);
    // Nothing the append named was on the path still to copy: it did not wait for the copy to end.
    await copying(id);
    // The source goes on too, apart.
    await append(src, [userMessage("the source goes on")]);

    // Under an entry still to copy: written once it is copied, where it belongs.
    await append(id, [{ ...userMessage("from the start again"), id: "g1", parentId: "m2" }]);
    await append(id, [{ type: "label", targetId: "m1", label: "one" }]);
    await finish(id);
    const path = await branchOf(src, "m40");
    const branch = await branchOf(id, "g1");
    expect(branch.slice(0, -1)).toEqual(path.slice(0, path.findIndex((e) => e.id === "m2") + 1));
    expect((await branchOf(id, "f1")).slice(0, path.length)).toEqual(path);
    const labels = treeLabels((await api("GET", `/v1/sessions/${id}/tree`)).body.roots);
    expect(labels.get("m1")).toBe("one");
    // An entry of the path still to copy is not written again under its id.
    expectError(
      await api("POST", `/v1/sessions/${(await fork(src)).id}/entries`, {
        body: { entries: [{ ...userMessage("another"), id: "m3" }] },
      }),
      409,
      "already_exists",
    );
  });

  it("checks an edit's target and a compaction's kept entry against the path still to copy", async () => {
    const src = await source();
    const { id } = await fork(src);
    await copying(id);
    const before = (await info(id)).entryCount;
    // After the fork point, on another branch, and above the branch it is appended to.
    for (const edit of [{ targetId: "m41" }, { targetId: "b21" }, { targetId: "m39", parentId: "m2" }]) {
      expectError(
        await api("POST", `/v1/sessions/${id}/entries`, {
          body: { type: "context_edit", replacement: null, ...edit },
        }),
        422,
        "invalid_tree",
      );
    }
    expect((await info(id)).entryCount).toBe(before);
    await append(id, [
      { type: "context_edit", targetId: "m1", replacement: null },
      { type: "compaction", summary: "S", tokensBefore: 1, firstKeptEntryId: "m2" },
    ]);
    await finish(id);
    const branch = await branchOf(id);
    expect(branch.slice(-2).map((entry) => entry.type)).toEqual(["context_edit", "compaction"]);
    expect(branch.slice(0, -2)).toEqual(await branchOf(src, "m40"));
  });

  it("moves its head before an entry it holds, onto one still to copy, and its history says so", async () => {
    const src = await createSession();
    await append(
      src,
      Array.from({ length: 30 }, (_, n) => ({ ...userMessage(text(n)), id: `u${n}` })),
    );
    const path = await branchOf(src, "u29");
    const { id } = await fork(src, "u29");
    // The first entry the fork holds: its parent is still to copy.
    const { copied } = await copying(id);
    const first = path[path.length - copied] as Entry;
    const parent = path[path.length - copied - 1] as Entry;
    const moved = await api("PUT", `/v1/sessions/${id}/leaf`, {
      body: { targetId: first.id, position: "before" },
    });
    expect(moved.status, moved.text).toBe(200);
    expect((await api("GET", `/v1/sessions/${id}/leaf`)).body.leafId).toBe(parent.id);
    const now = new Date().toISOString();
    expect((await api("GET", `/v1/sessions/${id}/leaf?asOf=${now}`)).body.leafId).toBe(parent.id);
    await finish(id);
    expect((await api("GET", `/v1/sessions/${id}/leaf?asOf=${now}`)).body.leafId).toBe(parent.id);
  });

  it("goes on after its object is evicted, and after every object restarts", async () => {
    const src = await source();
    const path = await branchOf(src, "m40");
    const { id } = await fork(src);
    const first = await copying(id);
    await evictDurableObject(objectOf(id));
    await runDurableObjectAlarm(objectOf(id));
    const second = await copying(id);
    expect(second.copied).toBeGreaterThan(first.copied);
    await abortAllDurableObjects();
    await runDurableObjectAlarm(objectOf(id));
    expect((await copying(id)).copied).toBeGreaterThan(second.copied);
    await finish(id);
    expect((await entriesOf(id)).slice(0, path.length)).toEqual(path);
  });

  it("tells its directory of the fork once its copy is done, not at each step of it", async () => {
    const src = await source();
    const { id } = await fork(src);
    await copying(id);
    let puts = 0;
    // Every object reaches the directory through the environment they share: only the fork's
    // reports count (its source's writes are reported meanwhile too).
    const directory = directoryReplacing("put", (real, args) => {
      if ((args[0] as { info: { id: string } }).info.id === id) puts++;
      return real(...args);
    });
    await withObjectEnv(objectOf(id), { DIRECTORY: directory }, async () => {
      let steps = 0;
      for (; (await info(id)).copying !== undefined; steps++) await runDurableObjectAlarm(objectOf(id));
      expect(steps).toBeGreaterThanOrEqual(4);
      // Two reports at most: the whole fork, due DIRECTORY_SYNC_MS after its last page, and its
      // text once indexed for search.
      await runAlarmOnceReportDue(objectOf(id));
      await runDurableObjectAlarm(objectOf(id));
      const reported = puts;
      expect(reported).toBeGreaterThanOrEqual(1);
      expect(reported).toBeLessThanOrEqual(2);
      await runDurableObjectAlarm(objectOf(id));
      expect(puts).toBe(reported);
    });
    const listed = (await api("GET", "/v1/sessions?limit=200")).body.sessions.find((s: any) => s.id === id);
    expect(listed.entryCount).toBe((await info(id)).entryCount);
  });

  it("is itself forked, and both end whole", async () => {
    const src = await source();
    const { id: first } = await fork(src);
    await copying(first);
    const { id: second, answer } = await fork(first, "m35");
    expect(answer.parentSession).toEqual({ id: first, entryId: "m35" });
    expect(await branchOf(second)).toEqual(await branchOf(src, "m35"));
    await finish(second);
    await finish(first);
    expect((await entriesOf(second)).slice(0, 36)).toEqual((await branchOf(src, "m35")).slice(0, 36));
  });
});

describe("a fork's source", () => {
  /** What the fork holds once done: its path as the source's. */
  async function endsWhole(forkId: string, path: Entry[]): Promise<void> {
    await finish(forkId);
    expect((await entriesOf(forkId)).slice(0, path.length)).toEqual(path);
  }

  it("deleted in the middle of a copy, loses the fork nothing", async () => {
    const src = await source();
    const path = await branchOf(src, "m40");
    const { id } = await fork(src);
    expect((await api("DELETE", `/v1/sessions/${src}`)).status).toBe(204);
    expectError(await api("GET", `/v1/sessions/${src}`), 404, "not_found");
    await endsWhole(id, path);
  });

  it("purged in the middle of a copy, is found by no one, and goes once the fork is done", async () => {
    const src = await source();
    const path = await branchOf(src, "m40");
    const { id } = await fork(src);
    expect((await api("DELETE", `/v1/sessions/${src}?purge=true`)).status).toBe(204);
    expectError(await api("GET", `/v1/sessions/${src}`), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${src}/entries`), 404, "not_found");
    // Its id is not free yet: a new session under it waits for the fork's copy (nothing written).
    const again = await api("POST", "/v1/sessions", { body: { id: src } });
    expectError(again, 503, "unavailable");
    expect(again.body.error.details.outcome).toBe("not_applied");
    await endsWhole(id, path);
    // The fork let go: the source's purge goes on (its alarm), its storage with it.
    const tables = () =>
      runInDurableObject(
        objectOf(src),
        (_, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master").one().n,
      );
    for (let tries = 0; (await tables()) > 0; tries++) {
      expect(tries).toBeLessThan(50);
      await runDurableObjectAlarm(objectOf(src));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await api("POST", "/v1/sessions", { body: { id: src } })).status).toBe(201);
  });

  it("deleted, then purged in the middle of a copy, is restored by no one while the purge waits", async () => {
    const src = await source();
    const path = await branchOf(src, "m40");
    const { id } = await fork(src);
    expect((await api("DELETE", `/v1/sessions/${src}`)).status).toBe(204);
    expect((await api("DELETE", `/v1/sessions/${src}?purge=true`)).status).toBe(204);
    // Purged for good: its recovery window closed with the purge, though its storage waits for the fork.
    expectError(await api("POST", `/v1/sessions/${src}/restore`, { body: {} }), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${src}`), 404, "not_found");
    const listed = (await api("GET", "/v1/sessions?limit=200")).body.sessions.map(
      (s: { id: string }) => s.id,
    );
    expect(listed).not.toContain(src);
    await endsWhole(id, path);
    const tables = () =>
      runInDurableObject(
        objectOf(src),
        (_, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master").one().n,
      );
    for (let tries = 0; (await tables()) > 0; tries++) {
      expect(tries).toBeLessThan(50);
      await runDurableObjectAlarm(objectOf(src));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expectError(await api("POST", `/v1/sessions/${src}/restore`, { body: {} }), 404, "not_found");
  });

  it("expired in the middle of a copy, loses the fork nothing", async () => {
    const src = await source();
    const path = await branchOf(src, "m40");
    const { id } = await fork(src);
    const soon = new Date(Date.now() + 300).toISOString();
    expect((await api("PATCH", `/v1/sessions/${src}`, { body: { expiresAt: soon } })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await runDurableObjectAlarm(objectOf(src));
    expectError(await api("GET", `/v1/sessions/${src}`), 404, "not_found");
    expect((await api("DELETE", `/v1/sessions/${src}?purge=true`)).status).toBe(204);
    await endsWhole(id, path);
  });

  it("keeps nothing for a fork sent again under the id of one still copying from it", async () => {
    const src = await source();
    const { id } = await fork(src);
    expectError(
      await api("POST", `/v1/sessions/${src}/fork`, { body: { entryId: "m40", id } }),
      409,
      "already_exists",
    );
    const holds = await runInDurableObject(objectOf(src), (_, state) =>
      state.storage.sql.exec<{ fork_id: string }>("SELECT fork_id FROM fork_holds").toArray(),
    );
    expect(holds).toEqual([{ fork_id: id }]);
  });

  it("is let go by a fork its tenant's quota refused", async () => {
    // The tenant may hold two sessions (vitest.workers.config.ts): the source and one more.
    const key = "key-few-sessions";
    const src = await createSession({ key });
    const turns = Array.from({ length: 20 }, (_, n) => ({ ...userMessage(text(n)), id: `q${n}` }));
    expect((await api("POST", `/v1/sessions/${src}/entries`, { key, body: { entries: turns } })).status).toBe(
      201,
    );
    const other = await createSession({ key });
    const forkId = sid("fork");
    const refused = await api("POST", `/v1/sessions/${src}/fork`, {
      key,
      body: { entryId: "q19", id: forkId },
    });
    expectError(refused, 413, "quota_exceeded");
    expectError(await api("GET", `/v1/sessions/${forkId}`, { key }), 404, "not_found");
    // Nothing holds the source: its purge frees its id at once.
    expect((await api("DELETE", `/v1/sessions/${src}?purge=true`, { key })).status).toBe(204);
    expect((await api("POST", "/v1/sessions", { key, body: { id: src } })).status).toBe(201);
    for (const id of [src, other]) {
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key })).status).toBe(204);
    }
  });

  it("is let go by a fork purged before its copy was done", async () => {
    const src = await source();
    const { id } = await fork(src);
    await copying(id);
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
    expect((await api("DELETE", `/v1/sessions/${src}?purge=true`)).status).toBe(204);
    expect((await api("POST", "/v1/sessions", { body: { id: src } })).status).toBe(201);
  });
});
