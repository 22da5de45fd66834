// Uses every Node-side entry point the way an application would, and prints what it saw.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AssistantMessage, MemoryRepo, type SessionContext, SessionError } from "cf-sessions";
import { type ClientOptions, createClient } from "cf-sessions/client";
import { ExtractiveSummarizer } from "cf-sessions/compaction";
import { toAnthropic } from "cf-sessions/formats";
import { exportPi, parsePi } from "cf-sessions/interchange";
import { JSONLRepo } from "cf-sessions/node";

const reply: AssistantMessage = {
  role: "assistant",
  content: [{ type: "text", text: "4" }],
  api: "openai-completions",
  provider: "openai",
  model: "gpt-4o",
  usage: {
    input: 10,
    output: 1,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 11,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  stopReason: "stop",
  timestamp: Date.now(),
};

const memory = new MemoryRepo();
const session = await memory.create({ name: "consumer" });
const question = await session.appendMessage({ role: "user", content: "2+2?", timestamp: Date.now() });
await session.appendMessage(reply);
const context: SessionContext = await session.buildContext({ leafId: question });

// The other entry points of the core: a model API's request, a session file, a summary.
const request = toAnthropic(context, { provider: "anthropic", modelId: "claude-sonnet-4-5" });
const lines: string[] = [];
for await (const line of exportPi(session)) lines.push(line);
const copy = await memory.importSession(parsePi(lines.join("")), { id: "copy" });
const copied = (await copy.getBranch()).map((entry) => entry.type);
const compaction = await copy.compact({ summarizer: new ExtractiveSummarizer(), keepRecentTokens: 1 });

const folder = mkdtempSync(join(tmpdir(), "consumer-jsonl-"));
const files = new JSONLRepo(folder);
const onDisk = await files.create({ id: "on-disk" });
await onDisk.appendMessage({ role: "user", content: "hello", timestamp: Date.now() });
const listed = (await files.list()).sessions.map((info) => info.id);
await files.cleanup();
rmSync(folder, { recursive: true, force: true });

// The client's errors are the core's SessionError (one class, whichever entry point it came from).
const options: ClientOptions = {
  baseUrl: "http://sessions.invalid",
  token: process.env.CONSUMER_TOKEN,
  fetch: async () =>
    Response.json({ error: { code: "not_found", message: "session does not exist" } }, { status: 404 }),
};
let clientError = "";
try {
  await createClient(options).open("missing");
} catch (error) {
  if (error instanceof SessionError) clientError = error.code;
}

console.log(
  JSON.stringify({
    messages: context.messages.length,
    anthropic: request.messages.length,
    copied,
    summarized: compaction.summary.length > 0,
    listed,
    clientError,
  }),
);
