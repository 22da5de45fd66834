import { exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it, vi } from "vitest";
import claudeCode from "../fixtures/claude-code/1.0.98-parallel-tools.jsonl?raw";
import { api, createSession, KEY_A, KEY_A_READ, KEY_B, sid } from "./helpers";

/* The tenant's history over MCP, driven by the SDK's own client against the Worker. */

const WRITE_TOOLS = ["append_note", "fork_session", "label_entry"];
const READ_TOOLS = ["list_sessions", "read_session", "search_sessions"];

async function connect(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://sessions.test/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
    fetch: (url, init) => exports.default.fetch(new Request(url, init)),
  });
  const client = new Client({ name: "mcp-test", version: "1" });
  await client.connect(transport);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  return { ...result, text };
}

async function importClaudeCode(id: string): Promise<void> {
  const res = await exports.default.fetch(
    `http://sessions.test/v1/sessions/import?format=claude-code&id=${id}`,
    {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/x-ndjson" },
      body: claudeCode,
    },
  );
  expect(res.status, await res.text()).toBe(201);
}

describe("MCP server", () => {
  it("searches an imported Claude Code session, reads its context, forks it; the fork is listed over HTTP", async () => {
    const id = sid("cc");
    await importClaudeCode(id);
    const client = await connect(KEY_A);
    expect(client.getServerVersion()?.name).toBe("cf-sessions");

    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name).sort()).toEqual([...WRITE_TOOLS, ...READ_TOOLS].sort());
    for (const t of tools) expect(t.description?.length).toBeGreaterThan(40);

    // The directory hears of the import within DIRECTORY_SYNC_MS.
    await vi.waitFor(
      async () => {
        const found = await call(client, "search_sessions", { query: "codebase" });
        expect(found.isError).toBeFalsy();
        expect(found.text).toContain(id);
      },
      { timeout: 10_000, interval: 50 },
    );

    const read = await call(client, "read_session", { sessionId: id, limit: 5 });
    expect(read.isError, read.text).toBeFalsy();
    expect(read.text).toContain("user: ");
    expect(read.text).toContain("CLAUDE.md");
    const first = read.structuredContent as { entries: { id: string }[]; nextCursor: string | null };
    expect(first.entries).toHaveLength(5);
    expect(first.nextCursor).toBe("5");
    const second = await call(client, "read_session", {
      sessionId: id,
      cursor: first.nextCursor,
      limit: 200,
    });
    const rest = second.structuredContent as { entries: { id: string }[]; nextCursor: string | null };
    expect(rest.nextCursor).toBeNull();
    expect(rest.entries[0]?.id).not.toBe(first.entries[0]?.id);

    const at = first.entries[4]?.id as string;
    const forkId = sid("fork");
    const forked = await call(client, "fork_session", { sessionId: id, entryId: at, newId: forkId });
    expect(forked.isError, forked.text).toBeFalsy();
    expect(forked.text).toContain(forkId);

    // The listing is the directory's, which hears of a new session within DIRECTORY_SYNC_MS.
    await vi.waitFor(
      async () => {
        const listed = await api("GET", "/v1/sessions?limit=100");
        const fork = listed.body.sessions.find((s: { id: string }) => s.id === forkId);
        expect(fork?.parentSession).toEqual({ id, entryId: at });
      },
      { timeout: 10_000, interval: 50 },
    );
    const forkRead = await call(client, "read_session", { sessionId: forkId, limit: 200 });
    expect((forkRead.structuredContent as { entries: unknown[] }).entries).toHaveLength(5);
    await client.close();
  });

  it("labels an entry and appends a note, both read back over HTTP", async () => {
    const id = await createSession();
    const client = await connect(KEY_A);
    const noted = await call(client, "append_note", { sessionId: id, text: "decided: keep SQLite" });
    expect(noted.isError, noted.text).toBeFalsy();
    const noteId = (noted.structuredContent as { leafId: string }).leafId;
    const labelled = await call(client, "label_entry", { sessionId: id, entryId: noteId, label: "decision" });
    expect(labelled.isError, labelled.text).toBeFalsy();

    const entries = await api("GET", `/v1/sessions/${id}/entries`);
    expect(entries.body.entries.map((e: { type: string }) => e.type)).toEqual(["custom_message", "label"]);
    expect(entries.body.entries[1]).toMatchObject({ targetId: noteId, label: "decision" });
    const read = await call(client, "read_session", { sessionId: id });
    expect(read.text).toContain("decided: keep SQLite");
    await client.close();
  });

  it("offers a read-only key no write tool and refuses its write call, writing nothing", async () => {
    const id = await createSession();
    const client = await connect(KEY_A_READ);
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(READ_TOOLS);
    const refused = await call(client, "append_note", { sessionId: id, text: "x" });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain("append_note");
    const listed = await call(client, "list_sessions", {});
    expect(listed.text).toContain(id);
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
    await client.close();
  });

  it("finds no session of another tenant, and writes none there", async () => {
    const id = await createSession({ key: KEY_A });
    const client = await connect(KEY_B);
    for (const [name, args] of [
      ["read_session", { sessionId: id }],
      ["fork_session", { sessionId: id }],
      ["append_note", { sessionId: id, text: "x" }],
      ["label_entry", { sessionId: id, entryId: "e1", label: "x" }],
    ] as const) {
      const result = await call(client, name, args);
      expect(result.isError, name).toBe(true);
      expect(result.text, name).toMatch(/^not_found/);
    }
    expect((await call(client, "list_sessions", {})).text).not.toContain(id);
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
    expect((await api("GET", "/v1/sessions?limit=100", { key: KEY_B })).body.sessions).toEqual([]);
    await client.close();
  });

  it("answers bad arguments with a tool error naming the argument, never a failure of the server", async () => {
    const id = await createSession();
    const client = await connect(KEY_A);
    const cases: [string, Record<string, unknown>, string][] = [
      ["read_session", { sessionId: "../x" }, "sessionId"],
      ["read_session", { sessionId: id, cursor: "nope" }, "cursor"],
      ["read_session", { sessionId: id, limit: 10_000 }, "limit"],
      ["search_sessions", { query: "x".repeat(100_000) }, "query"],
      ["search_sessions", { query: { deep: { deeper: [1] } } }, "query"],
      ["list_sessions", { prefix: "__proto__/" }, "prefix"],
      ["append_note", { sessionId: id, text: "" }, "text"],
      ["label_entry", { sessionId: id, entryId: "missing", label: "x" }, "missing"],
    ];
    for (const [name, args, named] of cases) {
      const result = await call(client, name, args);
      expect(result.isError, `${name} ${JSON.stringify(args).slice(0, 80)}`).toBe(true);
      expect(result.text).toContain(named);
      expect(result.text).not.toMatch(/at .*\.ts:\d+|stack/i);
    }
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
    await client.close();
  });

  it("refuses a request without a credential, and one from another site", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
    const anonymous = await exports.default.fetch("http://sessions.test/mcp", {
      method: "POST",
      headers,
      body,
    });
    expect(anonymous.status).toBe(401);
    const forged = await exports.default.fetch("http://sessions.test/mcp", {
      method: "POST",
      headers: { ...headers, Authorization: `Bearer ${KEY_A}`, Origin: "https://evil.example" },
      body,
    });
    expect(forged.status).toBe(403);
  });
});
