import { exports } from "cloudflare:workers";
import { describe, expect, expectTypeOf, it } from "vitest";
import { createClient } from "../../src/client";
import { MemoryRepo } from "../../src/core/memory";
import { contextForModel } from "../../src/core/providers/convert";
import { CONTEXT_FORMATS } from "../../src/core/providers/target";
import type { AnthropicRequest } from "../../src/core/providers/to-anthropic";
import type { GeminiRequest } from "../../src/core/providers/to-gemini";
import type { Session } from "../../src/core/session";
import { user } from "../conformance/fixtures";
import anthropicToolUse from "../fixtures/providers/anthropic-thinking-tool-use.json?raw";
import { KEY_A, sid } from "./helpers";

const worker = (request: Request) => exports.default.fetch(request);
const REPLY = JSON.parse(anthropicToolUse);
const CALL_ID: string = REPLY.content[1].id;

const client = () => createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });

/** One turn of an Anthropic agent loop: the reply, then the tool's result and a follow-up, each as the API has them. */
async function anthropicTurn(session: Session) {
  const reply = await session.appendProviderMessage("anthropic", REPLY, {
    id: "reply",
    timestamp: "2026-01-01T00:00:01.000Z",
  });
  const results = await session.appendProviderMessage(
    "anthropic",
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: CALL_ID, content: "no errors" },
        { type: "text", text: "Summarize." },
      ],
    },
    { id: "results", timestamp: "2026-01-01T00:00:02.000Z" },
  );
  return { reply, results };
}

describe("client: provider formats", () => {
  it("gets the context in each format, typed by the format, as the library converts it", async () => {
    const session = await client().create({ id: sid(), systemPrompt: "Be brief." });
    await session.appendModelChange("anthropic", "claude-sonnet-4-6");
    await session.appendMessage(user("Check the sandbox."));
    await anthropicTurn(session);
    const context = await session.buildContext();

    const anthropic = await session.contextIn("anthropic");
    expectTypeOf(anthropic).toEqualTypeOf<AnthropicRequest>();
    expect(anthropic.system).toBe("Be brief.");
    expect(anthropic.messages[1]?.content[0]).toEqual({
      type: "thinking",
      thinking: REPLY.content[0].thinking,
      signature: REPLY.content[0].signature,
    });
    const gemini = await session.contextIn("gemini", {
      model: { provider: "google", modelId: "gemini-2.5-pro" },
    });
    expectTypeOf(gemini).toEqualTypeOf<GeminiRequest>();
    expect(gemini).toEqual(
      contextForModel(context, "gemini", { model: { provider: "google", modelId: "gemini-2.5-pro" } }),
    );
    for (const format of CONTEXT_FORMATS) {
      expect(await session.contextIn(format, { imageInput: false }), format).toEqual(
        contextForModel(context, format, { imageInput: false }),
      );
    }
    const first = (await session.getBranch())[1]?.id as string;
    expect(await session.contextIn("openai-chat", { leafId: first })).toEqual({
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Check the sandbox." },
      ],
    });
    expect(await session.contextIn("ai-sdk-ui", { leafId: null })).toEqual({ messages: [] });
    await expect(session.contextIn("anthropic", { leafId: null })).rejects.toMatchObject({
      code: "invalid_request",
    });
  });

  it("appends provider messages as the library does over memory", async () => {
    const remote = await client().create({ id: sid() });
    const local = await new MemoryRepo().create({ id: remote.id });
    const question = user("Check the sandbox.");
    for (const session of [remote, local]) {
      await session.appendMessage(question, { id: "q", timestamp: "2026-01-01T00:00:00.000Z" });
      const { reply, results } = await anthropicTurn(session);
      expect(reply.map((e) => e.id)).toEqual(["reply"]);
      expect(results.map((e) => [e.id, e.parentId])).toEqual([
        ["results", "reply"],
        ["results:1", "results"],
      ]);
      expect(results[0]?.message).toMatchObject({ role: "toolResult", toolName: "checkSandboxErrors" });
    }
    const strip = (entries: Array<{ seq?: number }>) => entries.map(({ seq: _seq, ...entry }) => entry);
    expect(strip(await remote.getBranch())).toEqual(strip(await local.getBranch()));
  });

  it("retries an append whose response was lost, and the retry is a replay", async () => {
    const id = sid();
    await (await client().create({ id })).appendMessage(user("Check."));
    let dropped = false;
    const appends: string[] = [];
    const lossy = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      retryDelayMs: 1,
      fetch: async (request) => {
        const response = await worker(request);
        if (request.method === "POST" && request.url.endsWith("/entries")) {
          appends.push(String(response.status));
          if (!dropped) {
            dropped = true;
            throw new TypeError("network connection lost");
          }
        }
        return response;
      },
    });
    const session = await lossy.open(id);
    const reply = await session.appendProviderMessage("anthropic", REPLY);
    // Written by the first try, whose answer was lost; the retry replays it.
    expect(appends).toEqual(["201", "200"]);
    expect(reply).toHaveLength(1);
    const entries = await session.getEntries();
    expect(entries.map((e) => e.id)).toEqual([entries[0]?.id, reply[0]?.id]);
  });

  it("reports the service's errors: an invalid message names its field, nothing is written", async () => {
    const session = await client().create({ id: sid() });
    await session.appendMessage(user("Check."));
    await expect(
      session.appendProviderMessage("openai-chat", { role: "tool", content: "no id" }),
    ).rejects.toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("message.tool_call_id"),
    });
    expect((await session.getEntries()).length).toBe(1);
  });
});
