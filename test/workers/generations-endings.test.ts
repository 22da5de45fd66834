import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, onTestFinished } from "vitest";
import { MAX_BATCH_ENTRIES } from "../../src/core/limits";
import type { DurableEnv } from "../../src/durable/internal";
import { sessionObjectName } from "../../src/durable/internal";
import {
  appendEvents,
  appendText,
  endGeneration,
  openGeneration,
  sessionWithQuestion,
} from "./generation-helpers";
import { api, directoryReplacing, info, userMessage, withObjectEnv } from "./helpers";
import { head } from "./stream-helpers";

/*
 * Every generation ends: an answer longer than a batch is written in as many as it needs; one that
 * cannot be stored as it is (past the tenant's quota, its id taken) ends cut short, one assistant
 * message with `stopReason: "length"` saying why, never as a refusal that leaves it open. Past the
 * quota it keeps as much of its text as the room its chunks give back takes.
 */

/** The text an answer cut short keeps: a start of `chunks`, of which its note says how much. */
function keptText(
  message: { content: { type: string; text: string }[]; errorMessage: string },
  chunks: string,
) {
  const text = message.content[0]?.text ?? "";
  expect(chunks.startsWith(text)).toBe(true);
  expect(message.errorMessage).toContain(
    `${text.length} of ${chunks.length} characters of its text are kept`,
  );
  return text;
}

/**
 * Runs `run` while the session's idle settles do not reach its tenant's ledger (the directory out
 * of reach for them): the room the session was granted stays its own meanwhile.
 */
function withSettlesHeld<T>(tenant: string, id: string, run: () => Promise<T>): Promise<T> {
  const stub = env.SESSIONS.getByName(sessionObjectName(tenant, id));
  const directory = directoryReplacing("settleQuota", async () => undefined);
  return withObjectEnv(stub, { DIRECTORY: directory } as Partial<DurableEnv>, run);
}

const bytesOf = async (id: string, key: string) => (await info(id, key)).bytes as number;

/** What an entry of a user message takes stored besides its text, at the most. */
const ENTRY_FIELDS_BYTES = 250;

/** Appends to session `id` an entry of a user message whose stored JSON takes at most `bytes`. */
const appendSized = (id: string, bytes: number, key: string) =>
  api("POST", `/v1/sessions/${id}/entries`, {
    key,
    body: userMessage("x".repeat(bytes - ENTRY_FIELDS_BYTES)),
  });

describe("ending a generation", () => {
  it(`writes an agent's answer of more than ${MAX_BATCH_ENTRIES} entries in as many batches as it needs`, async () => {
    const { id, questionId } = await sessionWithQuestion();
    const generation = await openGeneration(id, { format: "ai-sdk-ui" });
    const steps = 1100;
    const parts: unknown[] = [{ type: "start" }];
    for (let step = 0; step < steps; step++) {
      const toolCallId = `call-${step}`;
      parts.push(
        { type: "start-step" },
        { type: "tool-input-available", toolCallId, toolName: "look", input: { step } },
        { type: "tool-output-available", toolCallId, output: `seen ${step}` },
        { type: "finish-step" },
      );
    }
    for (let from = 0; from < parts.length; from += 1000) {
      expect((await appendEvents(generation.stream, parts.slice(from, from + 1000))).status).toBe(204);
    }
    const stopped = await endGeneration(id, generation.id, "stop");
    expect(stopped.status, stopped.text).toBe(201);
    // A call and its result a step, then the answer's last assistant message.
    const entries = stopped.body.entries as { id: string; parentId: string; message: { role: string } }[];
    expect(entries).toHaveLength(2 * steps + 1);
    expect(entries[0]).toMatchObject({ id: generation.id, parentId: questionId });
    expect(entries[2 * steps - 1]?.message.role).toBe("toolResult");
    for (let i = 1; i < entries.length; i++) expect(entries[i]?.parentId).toBe(entries[i - 1]?.id);
    expect(stopped.body.generation.entryIds).toEqual(entries.map((entry) => entry.id));
    expect((await info(id)).entryCount).toBe(1 + 2 * steps + 1);
    // The head was at its parent: it moves to the answer's last entry.
    expect((await info(id)).leafId).toBe(entries[entries.length - 1]?.id);
  }, 60_000);

  it("past the tenant's quota, ends cut short with the reason, and the stream closed", async () => {
    const key = "key-small-tenant";
    const { id } = await sessionWithQuestion(key);
    const generation = await openGeneration(id, {}, key);
    // Chunks up to the tenant's 6,000 bytes: the answer they make, a little larger, has no room.
    const chunks = "x".repeat(6000 - ((await info(id, key)).bytes as number));
    expect((await appendText(generation.stream, chunks, {}, key)).status).toBe(204);
    const stopped = await endGeneration(id, generation.id, "stop", {}, key);
    expect(stopped.status, stopped.text).toBe(201);
    const [entry] = stopped.body.entries;
    expect(entry.message).toMatchObject({ role: "assistant", stopReason: "length" });
    expect(entry.message.errorMessage).toMatch(/quota_exceeded/);
    // All but the room the message's own fields take (under a kilobyte with its note), within the quota.
    expect(keptText(entry.message, chunks).length).toBeGreaterThan(chunks.length - 1000);
    expect((await info(id, key)).bytes).toBeLessThanOrEqual(6000);
    expect(stopped.body.generation).toMatchObject({ state: "stopped", entryIds: [entry.id] });
    expect((await head(generation.stream, key)).closed).toBe(true);
    // Its stop, repeated, answers the same.
    const again = await endGeneration(id, generation.id, "stop", {}, key);
    expect(again.status).toBe(200);
    expect(again.body.entries).toEqual(stopped.body.entries);
    expect((await api("GET", `/v1/sessions/${id}/entries/${entry.id}`, { key })).status).toBe(200);
    // The tenant's room, for the next test.
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key })).status).toBe(204);
  });

  it("past the session's own quota, keeps as much of its text as the quota leaves", async () => {
    const key = "key-small-sessions"; // 4,000 bytes a session
    const { id } = await sessionWithQuestion(key);
    const generation = await openGeneration(id, {}, key);
    const chunks = "y".repeat(4000 - ((await info(id, key)).bytes as number));
    expect((await appendText(generation.stream, chunks, {}, key)).status).toBe(204);
    const stopped = await endGeneration(id, generation.id, "stop", {}, key);
    expect(stopped.status, stopped.text).toBe(201);
    const [entry] = stopped.body.entries;
    expect(entry.message.errorMessage).toMatch(/quota_exceeded/);
    expect(keptText(entry.message, chunks).length).toBeGreaterThan(chunks.length - 1000);
    expect((await info(id, key)).bytes).toBeLessThanOrEqual(4000);
  });

  it("abandoned past the tenant's quota, is stopped by the alarm once, cut short", async () => {
    const key = "key-small-tenant";
    const { id } = await sessionWithQuestion(key);
    const generation = await openGeneration(id, { abandonAfterSeconds: 1 }, key);
    const chunks = "z".repeat(6000 - ((await info(id, key)).bytes as number));
    expect((await appendText(generation.stream, chunks, {}, key)).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // The alarm runs by itself once due; this runs it now if it has not yet.
    await runDurableObjectAlarm(env.SESSIONS.getByName(sessionObjectName("tenant-small-tenant", id)));
    const state = await api("GET", `/v1/sessions/${id}/generations/${generation.id}`, { key });
    expect(state.body).toMatchObject({ state: "stopped", stoppedBy: "abandoned" });
    const entry = await api("GET", `/v1/sessions/${id}/entries/${state.body.entryIds[0]}`, { key });
    expect(entry.body.message).toMatchObject({ stopReason: "length" });
    expect(keptText(entry.body.message, chunks).length).toBeGreaterThan(chunks.length - 1000);
    expect((await info(id, key)).bytes).toBeLessThanOrEqual(6000);
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key })).status).toBe(204);
  });

  it("completed past the tenant's quota, keeps the start of its text that the room takes", async () => {
    const key = "key-small-tenant";
    const { id } = await sessionWithQuestion(key);
    const generation = await openGeneration(id, {}, key);
    // 2,900 bytes of chunks; stored as JSON, each quote is escaped: twice that, more than the room.
    const chunks = '"'.repeat(2900);
    expect((await appendText(generation.stream, chunks, {}, key)).status).toBe(204);
    const room = 6000 - ((await info(id, key)).bytes as number) + chunks.length;
    const completed = await endGeneration(id, generation.id, "complete", {}, key);
    expect(completed.status, completed.text).toBe(201);
    const [entry] = completed.body.entries;
    expect(entry.message).toMatchObject({ role: "assistant", stopReason: "length" });
    expect(entry.message.errorMessage).toMatch(/quota_exceeded/);
    // Two bytes a character stored: about half the room, less the message's own fields.
    expect(keptText(entry.message, chunks).length).toBeGreaterThan((room - 1000) / 2);
    expect((await info(id, key)).bytes).toBeLessThanOrEqual(6000);
    expect(completed.body.generation).toMatchObject({ state: "finished", entryIds: [entry.id] });
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key })).status).toBe(204);
  });

  /*
   * tenant-answer-room: 8,000 bytes a session, 12,000 in all. An ending cut short takes no more of
   * the tenant's room than the text it keeps needs: until its session settles, what it took is
   * refused to the tenant's other sessions.
   */
  const ROOM_KEY = "key-answer-room";
  const ROOM_TENANT = "tenant-answer-room";
  /**
   * The room a session's claim holds beyond its bytes until it settles, at the most (its last
   * write's was granted with 1/64 of the quota to spare): what the other sessions may not use.
   */
  const SPARE_BYTES = Math.ceil(12_000 / 64);

  /** A session of the tenant holding one user message, purged (its room given back) after the test. */
  async function roomSession(): Promise<string> {
    const { id } = await sessionWithQuestion(ROOM_KEY);
    onTestFinished(async () => {
      const purged = await api("DELETE", `/v1/sessions/${id}?purge=true`, { key: ROOM_KEY });
      expect(purged.status).toBe(204);
    });
    return id;
  }

  it("past the session's own quota, leaves the rest of the tenant's room to its other sessions", async () => {
    const other = await roomSession();
    const id = await roomSession();
    const generation = await openGeneration(id, {}, ROOM_KEY);
    await withSettlesHeld(ROOM_TENANT, id, async () => {
      const chunks = "y".repeat(8000 - (await bytesOf(id, ROOM_KEY)));
      expect((await appendText(generation.stream, chunks, {}, ROOM_KEY)).status).toBe(204);
      const stopped = await endGeneration(id, generation.id, "stop", {}, ROOM_KEY);
      expect(stopped.status, stopped.text).toBe(201);
      const [entry] = stopped.body.entries;
      expect(entry.message.errorMessage).toMatch(/quota_exceeded/);
      expect(keptText(entry.message, chunks).length).toBeGreaterThan(chunks.length - 1000);
      const held = await bytesOf(id, ROOM_KEY);
      expect(held).toBeLessThanOrEqual(8000);
      const left = 12_000 - held - (await bytesOf(other, ROOM_KEY));
      const written = await appendSized(other, left - SPARE_BYTES, ROOM_KEY);
      expect(written.status, written.text).toBe(201);
    });
  });

  it("past the tenant's quota, takes no more of its room than the text it keeps", async () => {
    const filler = await roomSession();
    expect((await appendSized(filler, 5000, ROOM_KEY)).status).toBe(201);
    const id = await roomSession();
    const other = await roomSession();
    const generation = await openGeneration(id, { format: "ai-sdk-ui" }, ROOM_KEY);
    // Its tool's output, escaped once more as the text of its result, makes the answer twice the
    // size of its chunks: more than the tenant's room. Cut short, it keeps its text alone.
    const parts = [
      { type: "start" },
      { type: "start-step" },
      { type: "text-start", id: "x1" },
      { type: "text-delta", id: "x1", delta: "Looking it up." },
      { type: "text-end", id: "x1" },
      { type: "tool-input-available", toolCallId: "t1", toolName: "look", input: {} },
      { type: "tool-output-available", toolCallId: "t1", output: { found: '"'.repeat(2000) } },
      { type: "finish-step" },
    ];
    await withSettlesHeld(ROOM_TENANT, id, async () => {
      expect((await appendEvents(generation.stream, parts, {}, ROOM_KEY)).status).toBe(204);
      const stopped = await endGeneration(id, generation.id, "stop", {}, ROOM_KEY);
      expect(stopped.status, stopped.text).toBe(201);
      const [entry] = stopped.body.entries;
      expect(entry.message.errorMessage).toMatch(/quota_exceeded: the write would take this tenant past/);
      expect(entry.message.errorMessage).toMatch(/its text is kept$/);
      expect(entry.message.content).toEqual([{ type: "text", text: "Looking it up." }]);
      const held = await bytesOf(id, ROOM_KEY);
      const left = 12_000 - held - (await bytesOf(filler, ROOM_KEY)) - (await bytesOf(other, ROOM_KEY));
      // The filler's claim may not have settled yet either.
      const written = await appendSized(other, left - 2 * SPARE_BYTES, ROOM_KEY);
      expect(written.status, written.text).toBe(201);
    });
  });
});

describe("where the head goes when a generation ends", () => {
  /** The session's messages in its context, as their text. */
  const contextTexts = async (id: string) => {
    const context = await api("GET", `/v1/sessions/${id}/context`);
    return context.body.messages.map((m: { content: string | { text: string }[] }) =>
      typeof m.content === "string" ? m.content : m.content.map((block) => block.text).join(""),
    );
  };

  for (const how of ["complete", "stop"] as const) {
    it(`${how === "complete" ? "completed" : "stopped"} after the conversation went on, is a branch under its parent and leaves the head where it is`, async () => {
      const { id, questionId } = await sessionWithQuestion();
      const late = await openGeneration(id);
      await appendText(late.stream, "A late answer");
      const other = await openGeneration(id, { parentId: questionId });
      await appendText(other.stream, "The answer.");
      expect((await endGeneration(id, other.id, "complete")).status).toBe(201);
      const next = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("And then?") });
      const headId = next.body.leafId as string;
      const ended = await endGeneration(id, late.id, how);
      expect(ended.status, ended.text).toBe(201);
      expect(ended.body.entries[0]).toMatchObject({ id: late.id, parentId: questionId });
      expect((await info(id)).leafId).toBe(headId);
      expect(await contextTexts(id)).toEqual(["Hello?", "The answer.", "And then?"]);
      const after = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("Well?") });
      expect(after.body.entries[0].parentId).toBe(headId);
    });
  }

  it("a regenerate opened under an earlier message moves the head to its answer, the head unmoved meanwhile", async () => {
    const { id, questionId } = await sessionWithQuestion();
    const first = await openGeneration(id);
    await appendText(first.stream, "One answer.");
    expect((await endGeneration(id, first.id, "complete")).status).toBe(201);
    expect((await info(id)).leafId).toBe(first.id);
    const again = await openGeneration(id, { parentId: questionId });
    await appendText(again.stream, "Another answer.");
    expect((await endGeneration(id, again.id, "complete")).status).toBe(201);
    expect((await info(id)).leafId).toBe(again.id);
    expect(await contextTexts(id)).toEqual(["Hello?", "Another answer."]);
  });

  it("moves the head to its answer when the head went back to its parent meanwhile", async () => {
    const { id, questionId } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    const other = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("Also this.") });
    expect(other.status).toBe(201);
    expect((await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: questionId } })).status).toBe(
      200,
    );
    await appendText(generation.stream, "The answer.");
    expect((await endGeneration(id, generation.id, "stop")).status).toBe(201);
    expect((await info(id)).leafId).toBe(generation.id);
  });
});
