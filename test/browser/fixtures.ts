import { crc32, deflateSync } from "node:zlib";

/*
 * Sessions the viewer is tested on, written through the HTTP API as an agent would write them.
 */

/** A JSON request to the service as the dev tenant; throws on an error status, naming the envelope. */
export async function request<T = any>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const T0 = Date.parse("2026-11-30T09:00:00Z");

const usage = {
  input: 120,
  output: 40,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 160,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

export const user = (id: string, content: unknown, at = 0) => ({
  id,
  type: "message",
  message: { role: "user", content, timestamp: T0 + at },
});

export const assistant = (id: string, content: unknown[], model = "claude-sonnet-4", at = 0) => ({
  id,
  type: "message",
  message: {
    role: "assistant",
    content,
    api: model.startsWith("gpt") ? "openai-completions" : "anthropic-messages",
    provider: model.startsWith("gpt") ? "openai" : "anthropic",
    model,
    usage,
    stopReason: content.some((part: any) => part.type === "toolCall") ? "toolUse" : "stop",
    timestamp: T0 + at,
  },
});

export const toolResult = (id: string, toolCallId: string, toolName: string, text: string, at = 0) => ({
  id,
  type: "message",
  message: {
    role: "toolResult",
    toolCallId,
    toolName,
    content: [{ type: "text", text }],
    isError: false,
    timestamp: T0 + at,
  },
});

/** A small PNG (a blue-to-green gradient), so an image in the context is visible in a screenshot. */
export function gradientPng(width = 96, height = 48): string {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    for (let x = 0; x < width; x++) {
      raw[row + 1 + x * 3] = 40;
      raw[row + 2 + x * 3] = Math.round((x / width) * 200) + 40;
      raw[row + 3 + x * 3] = 220 - Math.round((y / height) * 120);
    }
  }
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]).toString("base64");
}

export interface DemoSession {
  id: string;
  compactionId: string;
  branchSummaryId: string;
}

/**
 * A coding session with two branch points, a label, model and thinking changes, a branch
 * summary and a compaction:
 *
 *   q1 ─┬─ mc1 · tl1 · a1 · r1 · a2 · r2 · a3 ("renamed") ─┬─ q2 · a4 · (label entry)
 *       │                                                 └─ branch summary · q3 · a5 · r5 · a6 · q4 · a7 · compaction · q5 · a8 (leaf)
 *       └─ mc2 · a1b
 */
export async function createDemoSession(base: string, id: string): Promise<DemoSession> {
  const path = `/v1/sessions/${id}`;
  await request(base, "POST", "/v1/sessions", {
    id,
    name: "Rename foo to bar",
    systemPrompt: "You are a careful engineer. Keep changes small.",
  });
  await request(base, "POST", `${path}/entries`, {
    entries: [
      user("q1", "Rename foo to bar in src/util.ts", 0),
      { id: "mc1", type: "model_change", provider: "anthropic", modelId: "claude-sonnet-4" },
      { id: "tl1", type: "thinking_level_change", thinkingLevel: "high" },
      assistant(
        "a1",
        [
          { type: "thinking", thinking: "The user wants a rename. I should read the file first." },
          { type: "toolCall", id: "call-read", name: "read", arguments: { path: "src/util.ts" } },
        ],
        "claude-sonnet-4",
        2000,
      ),
      toolResult("r1", "call-read", "read", "export function foo() {\n  return 1;\n}\n", 2500),
      assistant(
        "a2",
        [
          {
            type: "toolCall",
            id: "call-edit",
            name: "edit",
            arguments: { path: "src/util.ts", oldText: "function foo", newText: "function bar" },
          },
        ],
        "claude-sonnet-4",
        4000,
      ),
      toolResult("r2", "call-edit", "edit", "Edited src/util.ts (1 replacement)", 4500),
      assistant(
        "a3",
        [{ type: "text", text: "Renamed foo to bar in src/util.ts." }],
        "claude-sonnet-4",
        6000,
      ),
      user(
        "q2",
        [
          { type: "text", text: "Here is the call graph. Is bar still called from main?" },
          { type: "image", data: gradientPng(), mimeType: "image/png" },
        ],
        9000,
      ),
      assistant("a4", [{ type: "text", text: "Yes: main calls bar once." }], "claude-sonnet-4", 11000),
    ],
  });
  // Appended at the leaf (a4) like any entry: the label entry is a4's child.
  await request(base, "POST", `${path}/entries`, { type: "label", targetId: "a3", label: "renamed" });
  // An alternative first answer, from another model: the second branch under q1.
  await request(base, "POST", `${path}/entries`, {
    entries: [
      { id: "mc2", parentId: "q1", type: "model_change", provider: "openai", modelId: "gpt-4o" },
      assistant("a1b", [{ type: "text", text: "Which file is foo in?" }], "gpt-4o", 3000),
    ],
  });
  await request(base, "PUT", `${path}/leaf`, { targetId: "a4" });
  // Going back to a3 with a summary of what was tried after it: the branch summary.
  const moved = await request(base, "PUT", `${path}/leaf`, { targetId: "a3", summarize: true });
  await request(base, "POST", `${path}/entries`, {
    entries: [
      user("q3", "Also update the tests.", 20000),
      assistant(
        "a5",
        [
          {
            type: "toolCall",
            id: "call-tests",
            name: "edit",
            arguments: { path: "test/util.test.ts", oldText: "foo(", newText: "bar(" },
          },
        ],
        "claude-sonnet-4",
        22000,
      ),
      toolResult("r5", "call-tests", "edit", "Edited test/util.test.ts (3 replacements)", 22500),
      assistant("a6", [{ type: "text", text: "Updated test/util.test.ts." }], "claude-sonnet-4", 24000),
      user("q4", "Run them.", 30000),
      assistant("a7", [{ type: "text", text: "All 12 tests pass." }], "claude-sonnet-4", 34000),
    ],
  });
  const compacted = await request(base, "POST", `${path}/compact`, { keepRecentTokens: 8 });
  await request(base, "POST", `${path}/entries`, {
    entries: [
      user("q5", "Thanks! Summarize what changed.", 40000),
      assistant(
        "a8",
        [{ type: "text", text: "foo is now bar in src/util.ts and its tests; all tests pass." }],
        "claude-sonnet-4",
        42000,
      ),
    ],
  });
  return { id, compactionId: compacted.entry.id, branchSummaryId: moved.entry.id };
}

/** A session long enough (about 60,000 estimated tokens) that compacting with the defaults drops some of it. */
export async function createLongSession(base: string, id: string) {
  await request(base, "POST", "/v1/sessions", { id, name: "Long investigation" });
  const entries = [];
  for (let i = 0; i < 6; i++) {
    entries.push(user(`lq${i}`, `Step ${i}: look into module ${i}. ${"context ".repeat(2500)}`, i * 10000));
    entries.push(
      assistant(`la${i}`, [{ type: "text", text: `Module ${i} looks fine. ${"detail ".repeat(2500)}` }]),
    );
  }
  await request(base, "POST", `/v1/sessions/${id}/entries`, { entries });
}

/** A chain of `count` messages, appended in batches of 1,000 (the batch limit). */
export async function createChainSession(base: string, id: string, count: number) {
  await request(base, "POST", "/v1/sessions", { id, name: "Ten thousand entries" });
  for (let start = 0; start < count; start += 1000) {
    const entries = [];
    for (let i = start; i < Math.min(count, start + 1000); i++) {
      entries.push(
        i % 2 === 0
          ? user(`m${i}`, `Question ${i}: what comes next?`, i * 1000)
          : assistant(`m${i}`, [{ type: "text", text: `Answer ${i}.` }], "claude-sonnet-4", i * 1000),
      );
    }
    await request(base, "POST", `/v1/sessions/${id}/entries`, { entries });
  }
}
