import { describe, expect, it } from "vitest";
import { api, createSession, expectError, info, KEY_A_READ, KEY_B, userMessage } from "./helpers";
import { call, expectStreamError, head, readAll } from "./stream-helpers";

/*
 * Generations through the real routes: an answer written chunk by chunk to a stream kept in the
 * session's object, then completed or stopped into one entry, in one transaction with the
 * stream's close.
 */

async function sessionWithQuestion(): Promise<{ id: string; questionId: string }> {
  const id = await createSession();
  const res = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("Hello?") });
  expect(res.status).toBe(201);
  return { id, questionId: res.body.entries[0].id };
}

async function openGeneration(id: string, body: Record<string, unknown> = {}) {
  const res = await api("POST", `/v1/sessions/${id}/generations`, { body });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; stream: string; parentId: string | null; format: string; state: string };
}

function appendText(stream: string, text: string, headers: Record<string, string> = {}, key?: string) {
  return call("POST", stream, { key, body: text, headers: { "Content-Type": "text/plain", ...headers } });
}

describe("a text generation", () => {
  it("opens under the leaf, takes chunks, and completes into one entry with exactly the streamed text", async () => {
    const { id, questionId } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    expect(generation).toMatchObject({ parentId: questionId, format: "text", state: "open" });
    expect(generation.stream).toBe(`/v1/sessions/${id}/generations/${generation.id}/stream`);
    for (const chunk of ["Hel", "lo ", "wörld"])
      expect((await appendText(generation.stream, chunk)).status).toBe(204);
    expect((await readAll(generation.stream)).text).toBe("Hello wörld");
    expect((await head(generation.stream)).closed).toBe(false);

    const done = await api("POST", `/v1/sessions/${id}/generations/${generation.id}/complete`, { body: {} });
    expect(done.status, done.text).toBe(201);
    expect(done.body.entries).toHaveLength(1);
    const [entry] = done.body.entries;
    expect(entry).toMatchObject({ id: generation.id, parentId: questionId, type: "message" });
    expect(entry.message).toMatchObject({
      role: "assistant",
      stopReason: "stop",
      content: [{ type: "text", text: "Hello wörld" }],
    });
    expect((await head(generation.stream)).closed).toBe(true);
    expect((await info(id)).leafId).toBe(generation.id);
    expect(done.body.generation).toMatchObject({ state: "finished", entryIds: [generation.id] });
  });
});
