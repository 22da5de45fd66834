import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCodex } from "../../../src/core/codex-format";
import type { SessionContext } from "../../../src/core/context";
import { MemoryRepo } from "../../../src/core/memory";
import { blockText } from "../../../src/core/messages";
import { contextInFormat } from "../../../src/core/providers/convert";
import { CONTEXT_FORMATS } from "../../../src/core/providers/target";
import { targetModel } from "./support";

/*
 * A Codex rollout's `developer` messages (the sandbox's permissions, instructions Codex puts in
 * the history) reach the model in every format: as `developer` messages where OpenAI's APIs take
 * that role, in the system prompt where the API has none.
 */

const ROLLOUT = join(import.meta.dirname, "../../fixtures/codex/0.125.0-web-search-patches.jsonl");

async function rolloutContext(): Promise<{ context: SessionContext; instructions: string }> {
  const file = parseCodex(readFileSync(ROLLOUT, "utf8"));
  const context = await (await new MemoryRepo().importSession(file)).buildContext();
  const developer = context.messages.filter((message) => message.role === "developer");
  expect(developer).toHaveLength(1);
  const instructions = blockText((developer[0] as { content: unknown }).content);
  expect(instructions).toMatch(/^<permissions instructions>/);
  return { context, instructions };
}

const mentions = (value: unknown, text: string) =>
  JSON.stringify(value ?? null).includes(JSON.stringify(text).slice(1, 40));

describe("a Codex rollout's developer messages", () => {
  it("go to OpenAI Responses as a developer message in their place, before the user's first", async () => {
    const { context, instructions } = await rolloutContext();
    const request = contextInFormat(context, "openai-responses", targetModel("openai-responses"));
    const developer = request.input.findIndex((item) => "role" in item && item.role === "developer");
    const firstUser = request.input.findIndex((item) => "role" in item && item.role === "user");
    expect(request.input[developer]).toEqual({ role: "developer", content: instructions });
    expect(developer).toBeLessThan(firstUser);
    expect(request.instructions).toBe(context.systemPrompt);
  });

  it("go to OpenAI Chat Completions as a developer message in their place, after the system prompt", async () => {
    const { context, instructions } = await rolloutContext();
    const { messages } = contextInFormat(context, "openai-chat", targetModel("openai-chat"));
    expect(messages[0]).toEqual({ role: "system", content: context.systemPrompt });
    const developer = messages.findIndex((message) => message.role === "developer");
    expect(messages[developer]).toEqual({ role: "developer", content: instructions });
    expect(developer).toBeLessThan(messages.findIndex((message) => message.role === "user"));
  });

  it("go into the system prompt, after the session's own, for Anthropic, Gemini and the AI SDK", async () => {
    const { context, instructions } = await rolloutContext();
    const system = `${context.systemPrompt}\n\n${instructions}`;
    const anthropic = contextInFormat(context, "anthropic", targetModel("anthropic"));
    expect(anthropic.system).toBe(system);
    expect(mentions(anthropic.messages, instructions)).toBe(false);
    const gemini = contextInFormat(context, "gemini", targetModel("gemini"));
    expect(gemini.systemInstruction).toEqual({ parts: [{ text: system }] });
    expect(mentions(gemini.contents, instructions)).toBe(false);
    const aiSdk = contextInFormat(context, "ai-sdk", targetModel("ai-sdk"));
    expect(aiSdk.system).toBe(system);
    expect(mentions(aiSdk.messages, instructions)).toBe(false);
  });

  it("stay server-side with the system prompt in AI SDK UI messages, and reach every request format", async () => {
    const { context, instructions } = await rolloutContext();
    const ui = contextInFormat(context, "ai-sdk-ui", targetModel("ai-sdk-ui"));
    expect(mentions(ui, instructions)).toBe(false);
    for (const format of CONTEXT_FORMATS.filter((format) => format !== "ai-sdk-ui"))
      expect(mentions(contextInFormat(context, format, targetModel(format)), instructions)).toBe(true);
  });
});
