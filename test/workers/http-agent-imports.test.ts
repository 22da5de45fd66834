import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import claudeCode from "../fixtures/claude-code/1.0.98-parallel-tools.jsonl?raw";
import codex from "../fixtures/codex/0.58.0-shell-calls.jsonl?raw";
import { api, expectError, sid } from "./helpers";

/* Claude Code and Codex CLI sessions over HTTP: `POST /v1/sessions/import?format=claude-code|codex`. */

function lines(text: string): Array<Record<string, unknown>> {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

async function importFile(body: string, query: string) {
  const res = await exports.default.fetch(`http://sessions.test/v1/sessions/import${query}`, {
    method: "POST",
    headers: { Authorization: "Bearer key-a", "Content-Type": "application/x-ndjson" },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

describe("agent session import", () => {
  it("imports a Claude Code session under the id made from its own, with its context", async () => {
    const res = await importFile(claudeCode, "?format=claude-code");
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      id: "claude-code-1af7fc5e-8455-4414-9ccd-011d40f70b2a",
      leafId: "549b3502-6e30-4fa5-869f-c998df26c3f0",
      messageCount: 21,
    });
    expect(res.body.warnings).toEqual([]);
    const context = await api("GET", `/v1/sessions/${res.body.id}/context`);
    expect(context.body.messages.length).toBe(21);
    expect(context.body.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-20250514" });

    // The same file again keeps the import idempotent for a caller that names the id: 409.
    expectError(
      await api("POST", `/v1/sessions/import?format=claude-code&id=${res.body.id}`, {
        raw: claudeCode,
        headers: { "Content-Type": "application/x-ndjson" },
      }),
      409,
      "already_exists",
    );
  });

  it("imports a Codex rollout, and lists what it repaired", async () => {
    const id = sid("codex");
    const torn = `${codex}{"timestamp":"2025-11-17T21:40:00.000Z","type":"event_m`;
    const res = await importFile(torn, `?format=codex&id=${id}`);
    expect(res.status, res.text).toBe(201);
    expect(res.body.id).toBe(id);
    expect(res.body.warnings).toEqual([{ line: 280, message: expect.stringContaining("torn") }]);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body).toMatchObject({
      thinkingLevel: "high",
      model: { provider: "openai", modelId: "gpt-5.1-codex" },
    });
    expect(context.body.messages.length).toBe(80);
  });

  it("refuses a file with a bad line before the last, naming it, and writes nothing", async () => {
    const id = sid("refused");
    const lines = codex.split("\n");
    lines[4] = "{not json";
    const res = await importFile(lines.join("\n"), `?format=codex&id=${id}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "invalid_request", details: { line: 5 } });
    expect(res.body.error.message).toMatch(/^line 5:/);
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
  });

  it("refuses a file of another format than named, and writes nothing", async () => {
    const id = sid("wrong");
    const res = await importFile(claudeCode, `?format=codex&id=${id}`);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/session_meta/);
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
  });

  it("exports a Claude Code session back as the lines it was imported from", async () => {
    const res = await importFile(claudeCode, `?format=claude-code&id=${sid("cc-back")}`);
    const exported = await api("GET", `/v1/sessions/${res.body.id}/export?format=claude-code`);
    expect(exported.status).toBe(200);
    expect(exported.headers.get("Content-Type")).toContain("application/x-ndjson");
    expect(lines(exported.text)).toEqual(lines(claudeCode));
  });

  it("exports a session written over HTTP as a Claude Code transcript that imports to its conversation", async () => {
    const id = sid("cc-http");
    await api("POST", "/v1/sessions", { body: { id, name: "Over HTTP" } });
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { type: "message", message: { role: "user", content: "What is 2+2?", timestamp: 1 } },
          {
            type: "message",
            format: "openai-chat",
            message: {
              role: "assistant",
              content: "4",
              tool_calls: [
                { id: "call_1", type: "function", function: { name: "calc", arguments: '{"q":"2+2"}' } },
              ],
            },
          },
          {
            type: "message",
            format: "openai-chat",
            message: { role: "tool", tool_call_id: "call_1", content: "4" },
          },
        ],
      },
    });
    const exported = await api("GET", `/v1/sessions/${id}/export?format=claude-code`);
    expect(exported.status).toBe(200);
    const transcript = lines(exported.text);
    expect(transcript.map((l) => l.type)).toEqual(["user", "assistant", "user", "custom-title"]);
    const copy = await importFile(exported.text, `?format=claude-code&id=${sid("cc-copy")}`);
    expect(copy.status, copy.text).toBe(201);
    expect(copy.body).toMatchObject({ name: "Over HTTP", messageCount: 3 });
    const roles = (await api("GET", `/v1/sessions/${copy.body.id}/context`)).body.messages.map(
      (m: { role: string }) => m.role,
    );
    expect(roles).toEqual(["user", "assistant", "toolResult"]);
  });

  it("exports a message whose time no date can hold at its entry's time", async () => {
    const id = sid("far-future");
    await api("POST", "/v1/sessions", { body: { id } });
    // Only the roles a model reads have their fields checked: another role keeps any time it has.
    const note = await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        type: "message",
        message: {
          role: "custom",
          customType: "note",
          content: "Remember this.",
          display: true,
          timestamp: 1e18,
        },
      },
    });
    expect(note.status, note.text).toBe(201);
    for (const format of ["claude-code", "codex"]) {
      const exported = await api("GET", `/v1/sessions/${id}/export?format=${format}`);
      expect(exported.status, exported.text).toBe(200);
      const written = lines(exported.text).filter((l) => JSON.stringify(l).includes("Remember this."));
      expect(written.length).toBeGreaterThan(0);
      for (const line of written) expect(line.timestamp).toBe(note.body.entries[0].timestamp);
    }
  });

  it("exports a Codex rollout back as it was, and a Claude Code session as a rollout", async () => {
    const res = await importFile(codex, `?format=codex&id=${sid("cx-back")}`);
    const exported = await api("GET", `/v1/sessions/${res.body.id}/export?format=codex`);
    expect(exported.status).toBe(200);
    expect(lines(exported.text)).toEqual(lines(codex));
    const cc = await importFile(claudeCode, `?format=claude-code&id=${sid("cc-to-cx")}`);
    const rollout = await api("GET", `/v1/sessions/${cc.body.id}/export?format=codex`);
    const copy = await importFile(rollout.text, `?format=codex&id=${sid("cx-copy")}`);
    expect(copy.status, copy.text).toBe(201);
    const roles = async (id: string) =>
      (await api("GET", `/v1/sessions/${id}/context`)).body.messages.map((m: { role: string }) => m.role);
    expect(await roles(copy.body.id)).toEqual(await roles(cc.body.id));
  });

  it("refuses an export format it does not know, naming the ones it does", async () => {
    const res = await importFile(codex, `?format=codex&id=${sid("export")}`);
    const refused = await api("GET", `/v1/sessions/${res.body.id}/export?format=csv`);
    expectError(refused, 415, "unsupported_format");
    expect(refused.body.error.message).toContain("claude-code, codex");
    const pi = await api("GET", `/v1/sessions/${res.body.id}/export?format=pi`);
    expect(pi.status).toBe(200);
    expect(JSON.parse(pi.text.split("\n")[0] as string)).toMatchObject({
      cwd: "/home/user/projects/temp/chatbot-ui",
    });
  });
});
