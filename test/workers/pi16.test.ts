import { describe, expect, it } from "vitest";
import type { SessionContext } from "../../src/core/context";
import { buildSessionContext } from "../../src/core/context";
import type { TreeEntry } from "../../src/core/entries";
import { api, assistantMessage, createSession, expectError, info, userMessage } from "./helpers";

/*
 * pi 1.6's entries in the service: the context the object keeps at the head and the `?since=`
 * deltas stay equal to a context built from scratch while edits change earlier messages; search,
 * provider formats and the error envelope see edits, system messages and usage entries.
 */

/** A small deterministic generator, so a failing sequence can be replayed. */
function random(seed: number) {
  let state = seed >>> 0;
  return (n: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % n;
  };
}

/** The context of the head built here from the stored branch: what the object must answer. */
async function rebuilt(id: string, systemPrompt = ""): Promise<Omit<SessionContext, never>> {
  const branch = await api("GET", `/v1/sessions/${id}/branch`);
  expect(branch.status, branch.text).toBe(200);
  return buildSessionContext(branch.body.entries as TreeEntry[], { sessionSystemPrompt: systemPrompt });
}

interface Known {
  version: string;
  context: Record<string, unknown>;
}

function apply(known: Known | undefined, answer: Record<string, unknown>): Known {
  const {
    version,
    since,
    append,
    reset: _reset,
    messages,
    ...settings
  } = answer as {
    version: string;
    since?: string;
    append?: unknown[];
    reset?: boolean;
    messages?: unknown[];
  };
  if (since !== undefined) {
    expect(known?.version).toBe(since);
    return {
      version,
      context: {
        ...settings,
        messages: [...((known?.context.messages as unknown[]) ?? []), ...(append ?? [])],
      },
    };
  }
  return { version, context: { ...settings, messages } };
}

const system = (sections: Record<string, string | null>) => ({
  type: "message",
  message: { role: "system", content: "", sections, timestamp: 1_700_000_000_000 },
});

describe("context edits in the object's kept context and deltas", () => {
  it("equal the context built from scratch at every step of a random loop with edits", async () => {
    const id = await createSession();
    const next = random(20261201);
    const kinds = { delta: 0, reset: 0, editReset: 0 };
    let known: Known | undefined;
    /** Entries on the branch an edit may name, oldest first. */
    let editable: string[] = [];
    for (let step = 0; step < 70; step++) {
      const choice = next(10);
      let edited = false;
      if (choice < 5 || editable.length < 2) {
        const body = next(2) === 0 ? userMessage(`u${step}`) : assistantMessage(`a${step}`);
        const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { ...body, id: `e${step}` } });
        expect(res.status, res.text).toBe(201);
        editable.push(`e${step}`);
      } else if (choice < 8) {
        const target = editable[next(editable.length)] as string;
        const replacement = next(3) === 0 ? null : { content: `edited at ${step}` };
        const res = await api("POST", `/v1/sessions/${id}/entries`, {
          body: { type: "context_edit", targetId: target, replacement },
        });
        expect(res.status, res.text).toBe(201);
        edited = true;
      } else if (choice === 8) {
        const res = await api("POST", `/v1/sessions/${id}/entries`, {
          body: system({ s: `section ${step}` }),
        });
        expect(res.status, res.text).toBe(201);
      } else {
        const res = await api("POST", `/v1/sessions/${id}/compact`, {
          body: { summary: `summary ${step}`, keepRecentTokens: 1 },
        });
        expect([201, 409]).toContain(res.status);
        // Edits name entries the compaction kept, or ones it summarized (no effect then).
        if (res.status === 201) editable = editable.slice(-3);
      }
      const answer = await api("GET", `/v1/sessions/${id}/context${known ? `?since=${known.version}` : ""}`);
      expect(answer.status, answer.text).toBe(200);
      if (answer.body.since !== undefined) kinds.delta++;
      if (answer.body.reset) {
        kinds.reset++;
        if (edited) kinds.editReset++;
      }
      // An edit changes an earlier message: never a delta.
      if (edited && known) expect(answer.body.reset, `step ${step}`).toBe(true);
      known = apply(known, answer.body);
      const expected = await rebuilt(id);
      expect(known.context, `step ${step}`).toEqual(expected);
      const full = await api("GET", `/v1/sessions/${id}/context`);
      const { version: _version, ...kept } = full.body;
      expect(kept, `step ${step}`).toEqual(expected);
      expect(full.body.version).toBe(known.version);
    }
    expect(kinds.delta).toBeGreaterThan(15);
    expect(kinds.editReset).toBeGreaterThan(5);
  });

  it("starts over a delta whose new entries an edit written before them names (a hand-made pi file)", async () => {
    const id = `pi-${crypto.randomUUID()}`;
    const at = (n: number) => new Date(Date.UTC(2026, 10, 1, 0, 0, n)).toISOString();
    const lines = [
      { type: "session", version: 3, id, timestamp: at(0), cwd: "/w" },
      { type: "message", id: "u1", parentId: null, timestamp: at(1), message: userMessage("q").message },
      // pi applies an edit to its target wherever both are on the path, even above it.
      { type: "context_edit", id: "e1", parentId: "u1", timestamp: at(2), targetId: "u2", replacement: null },
      { type: "message", id: "a1", parentId: "e1", timestamp: at(3), message: assistantMessage("a").message },
      { type: "message", id: "u2", parentId: "a1", timestamp: at(4), message: userMessage("hidden").message },
      { type: "message", id: "u3", parentId: "u2", timestamp: at(5), message: userMessage("shown").message },
    ];
    const imported = await api("POST", "/v1/sessions/import?format=pi", {
      raw: `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(imported.status, imported.text).toBe(201);
    const before = await api("GET", `/v1/sessions/${id}/context?leafId=a1`);
    const grown = await api("GET", `/v1/sessions/${id}/context?since=${before.body.version}`);
    expect(grown.body.reset).toBe(true);
    expect(grown.body.messages.map((m: { content: unknown }) => m.content)).toEqual([
      "q",
      [{ type: "text", text: "a" }],
      "shown",
    ]);
  });
});

describe("pi 1.6 entries over HTTP", () => {
  it("finds an edit's text, and marks the edited message on the branch with the edit", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { ...userMessage("the launch codes are 1234"), id: "q" },
    });
    const edit = await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        type: "context_edit",
        id: "edit1",
        targetId: "q",
        replacement: { content: "the launch codes are redacted" },
      },
    });
    expect(edit.status, edit.text).toBe(201);
    const hits = await api("GET", `/v1/sessions/${id}/search?q=launch`);
    expect(hits.body.hits.map((h: { entryId: string }) => h.entryId)).toEqual(["edit1", "q"]);
    expect(hits.body.hits[1]).toMatchObject({ entryId: "q", onBranch: true, editedBy: "edit1" });
    expect(hits.body.hits[0].editedBy).toBeUndefined();
    // The original stays findable in history.
    expect((await api("GET", `/v1/sessions/${id}/search?q=1234`)).body.hits).toMatchObject([
      { entryId: "q" },
    ]);
  });

  it("sends the prompt system messages replay to as each API's system prompt, after the session's own", async () => {
    const id = await createSession({ body: { systemPrompt: "Be brief." } });
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          system({ preamble: "You code.", cwd: "/w" }),
          userMessage("q"),
          assistantMessage("a"),
          system({ cwd: null, skills: "Use skills." }),
          userMessage("q2"),
        ],
      },
    });
    const prompt = "Be brief.\n\nYou code.\n\nUse skills.";
    const anthropic = await api("GET", `/v1/sessions/${id}/context?format=anthropic`);
    expect(anthropic.body.system).toBe(prompt);
    expect(anthropic.body.messages.map((m: { role: string }) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
    ]);
    const responses = await api("GET", `/v1/sessions/${id}/context?format=openai-responses`);
    expect(responses.body.instructions).toBe(prompt);
    const gemini = await api("GET", `/v1/sessions/${id}/context?format=gemini`);
    expect(gemini.body.systemInstruction).toEqual({ parts: [{ text: prompt }] });
    const chat = await api("GET", `/v1/sessions/${id}/context?format=openai-chat`);
    expect(chat.body.messages[0]).toEqual({ role: "system", content: prompt });
  });

  it("applies an edit before converting to a provider's shape", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [{ ...userMessage("original"), id: "q" }, assistantMessage("a")] },
    });
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "context_edit", targetId: "q", replacement: { content: "replaced" } },
    });
    const anthropic = await api("GET", `/v1/sessions/${id}/context?format=anthropic`);
    expect(anthropic.body.messages[0]).toEqual({
      role: "user",
      content: [{ type: "text", text: "replaced" }],
    });
  });

  it("refuses a bad edit with invalid_tree and a usage entry without its fields with invalid_request, writing nothing", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: { ...userMessage("q"), id: "q" } });
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "model_change", id: "m", provider: "p", modelId: "x" },
    });
    const before = await info(id);
    for (const targetId of ["missing", "m"]) {
      expectError(
        await api("POST", `/v1/sessions/${id}/entries`, {
          body: { type: "context_edit", targetId, replacement: null },
        }),
        422,
        "invalid_tree",
      );
    }
    const usage = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "usage", kind: "cache_warm", provider: "p", model: "m" },
    });
    expectError(usage, 400, "invalid_request");
    expect(JSON.stringify(usage.body.error.details)).toContain("usage");
    expect(await info(id)).toEqual(before);
  });

  it("refuses a pi file with a usage entry without its fields, naming the line, and creates nothing", async () => {
    const id = `pi-${crypto.randomUUID()}`;
    const lines = [
      { type: "session", version: 3, id, timestamp: "2026-11-01T00:00:00.000Z", cwd: "/w" },
      {
        type: "message",
        id: "u1",
        parentId: null,
        timestamp: "2026-11-01T00:00:01.000Z",
        message: userMessage("q").message,
      },
      { type: "usage", id: "g1", parentId: "u1", timestamp: "2026-11-01T00:00:02.000Z", kind: "cache_warm" },
    ];
    const res = await api("POST", "/v1/sessions/import?format=pi", {
      raw: `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expectError(res, 400, "invalid_request");
    expect(res.body.error.details).toMatchObject({ line: 3 });
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
  });
});
