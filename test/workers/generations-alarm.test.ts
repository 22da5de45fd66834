import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import { appendText, endGeneration, openGeneration, sessionWithQuestion } from "./generation-helpers";
import { api, expectError, info, userMessage } from "./helpers";
import { call, expectStreamError, head, readAll } from "./stream-helpers";

/*
 * The session object's alarm and its generations: one left without an append is stopped as a
 * client's stop would (its text kept, aborted), though the object was evicted meanwhile; an ended
 * one's stream is removed after its retention window, and its entry stays.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The object of one of tenant A's sessions (test/workers/helpers.ts: key-a). */
const objectOf = (id: string) => env.SESSIONS.getByName(sessionObjectName("tenant-a", id));

/** Generation streams the object still stores, read from its SQLite. */
function storedStreams(id: string): Promise<number> {
  return runInDurableObject(objectOf(id), (_instance, state) => {
    const tables = state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'streams'").toArray();
    if (tables.length === 0) return 0;
    return Number(state.storage.sql.exec("SELECT count(*) AS n FROM streams").one().n);
  });
}

describe("the alarm and generations", () => {
  it("stops a generation left without an append, after the object was evicted, keeping what it wrote", async () => {
    const { id, questionId } = await sessionWithQuestion();
    const generation = await openGeneration(id, { abandonAfterSeconds: 3 });
    await appendText(generation.stream, "The writer ");
    await appendText(generation.stream, "went away");
    const abandoned = Date.now() + 3_000;
    await evictDurableObject(objectOf(id));
    await sleep(abandoned - Date.now() + 100);
    // The alarm runs by itself once due; this runs it now if it has not yet.
    await runDurableObjectAlarm(objectOf(id));
    const state = await api("GET", `/v1/sessions/${id}/generations/${generation.id}`);
    expect(state.body).toMatchObject({ state: "stopped", stoppedBy: "abandoned", entryIds: [generation.id] });
    const entry = await api("GET", `/v1/sessions/${id}/entries/${generation.id}`);
    expect(entry.body).toMatchObject({ parentId: questionId });
    expect(entry.body.message).toMatchObject({
      stopReason: "aborted",
      content: [{ type: "text", text: "The writer went away" }],
    });
    expect((await head(generation.stream)).closed).toBe(true);
    const late = await appendText(generation.stream, " and came back");
    expectStreamError(late, 409, "stream_closed");
    expect(late.json.error.message).toMatch(/abandoned/);
    expect((await info(id)).entryCount).toBe(2);
    // The head was still at its parent: it moves to the answer.
    expect((await info(id)).leafId).toBe(generation.id);
  });

  it("stops a generation abandoned while the conversation went on as a branch under its parent, the head left where it is", async () => {
    const { id, questionId } = await sessionWithQuestion();
    // A writer's first try, lost midway; its retry answered whole, and the user went on.
    const lost = await openGeneration(id, { abandonAfterSeconds: 1 });
    await appendText(lost.stream, "half an ans");
    const retried = await openGeneration(id, { parentId: questionId });
    await appendText(retried.stream, "The whole answer.");
    expect((await endGeneration(id, retried.id, "complete")).status).toBe(201);
    const next = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("And then?") });
    expect(next.status).toBe(201);
    const headId = next.body.leafId as string;
    await sleep(1_100);
    await runDurableObjectAlarm(objectOf(id));
    const state = await api("GET", `/v1/sessions/${id}/generations/${lost.id}`);
    expect(state.body).toMatchObject({ state: "stopped", stoppedBy: "abandoned", entryIds: [lost.id] });
    const entry = await api("GET", `/v1/sessions/${id}/entries/${lost.id}`);
    expect(entry.body).toMatchObject({ parentId: questionId });
    expect((await info(id)).leafId).toBe(headId);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages.map((m: { content: unknown }) => m.content)).toEqual([
      "Hello?",
      [{ type: "text", text: "The whole answer." }],
      "And then?",
    ]);
    // The next append goes on from the head, not from the abandoned answer.
    const after = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("Well?") });
    expect(after.body.entries[0].parentId).toBe(headId);
  });

  it("keeps a session whose answer is being written from expiring as idle; ended, it may", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    expect((await appendText(generation.stream, "still writing")).status).toBe(204);
    // The retention sweep asks as if a week passed without a write.
    const weekOn = new Date(Date.now() + 7 * 24 * 3600_000).toISOString();
    expect(await objectOf(id).expireIdle(weekOn)).toEqual({ ok: true, value: "kept" });
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
    expect((await endGeneration(id, generation.id, "complete")).status).toBe(201);
    expect(await objectOf(id).expireIdle(weekOn)).toEqual({ ok: true, value: "expired" });
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
  });

  it("keeps a generation that goes on being written, however long it takes", async () => {
    const { id } = await sessionWithQuestion();
    // Longer than the abandon window in all, a third of it between appends.
    const generation = await openGeneration(id, { abandonAfterSeconds: 3 });
    for (let i = 0; i < 5; i++) {
      await appendText(generation.stream, `${i}`);
      await sleep(1_000);
      await runDurableObjectAlarm(objectOf(id));
    }
    const state = await api("GET", `/v1/sessions/${id}/generations/${generation.id}`);
    expect(state.body.state).toBe("open");
  });

  it("removes an ended generation's stream after its retention window; its entry stays", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id, { retainSeconds: 3 });
    await appendText(generation.stream, "briefly kept");
    await endGeneration(id, generation.id, "complete");
    const gone = Date.now() + 3_000;
    expect((await readAll(generation.stream)).text).toBe("briefly kept");
    await evictDurableObject(objectOf(id));
    await sleep(gone - Date.now() + 100);
    await runDurableObjectAlarm(objectOf(id));
    expect(await storedStreams(id)).toBe(0);
    expectStreamError(await call("GET", generation.stream), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/generations/${generation.id}`), 404, "not_found");
    const entry = await api("GET", `/v1/sessions/${id}/entries/${generation.id}`);
    expect(entry.body.message.content[0].text).toBe("briefly kept");
  });
});
