import { describe, expect, it } from "vitest";
import type { SessionError } from "../../../src/core/errors";
import { contextInFormat, convertProviderMessage } from "../../../src/core/providers/convert";
import { ProviderMessageEntryInput } from "../../../src/core/providers/entry-input";
import { fromAISDK } from "../../../src/core/providers/from-ai-sdk";
import { CONTEXT_FORMATS, parseContextFormat, parseModelRef } from "../../../src/core/providers/target";
import { toAISDKUIMessages } from "../../../src/core/providers/to-ai-sdk-ui";
import { ANTHROPIC, assistant, context, GEMINI, text, thinking, user } from "./support";

function codeOf(run: () => unknown): { code: string; message: string; details: unknown } {
  try {
    run();
  } catch (error) {
    const e = error as SessionError;
    return { code: e.code, message: e.message, details: e.details };
  }
  throw new Error("expected a SessionError");
}

describe("contextInFormat", () => {
  const ctx = context([user("Hi."), assistant([thinking("Plan.", "SIG"), text("Hello.")], ANTHROPIC)]);

  it("builds every format", () => {
    for (const format of CONTEXT_FORMATS) {
      const out = contextInFormat(ctx, format, { provider: "anthropic", modelId: ANTHROPIC.model });
      expect(JSON.stringify(out)).toContain("Hello.");
    }
  });

  it("takes the API from the format, so a reply of the named model keeps its signature", () => {
    const out = contextInFormat(ctx, "anthropic", { provider: "anthropic", modelId: ANTHROPIC.model });
    expect(out.messages[1]?.content[0]).toEqual({ type: "thinking", thinking: "Plan.", signature: "SIG" });
    const gemini = contextInFormat(ctx, "gemini", { provider: "anthropic", modelId: ANTHROPIC.model });
    expect(gemini.contents[1]?.parts).toEqual([{ text: "Plan." }, { text: "Hello." }]);
  });

  it("refuses an unknown format with unsupported_format", () => {
    const error = codeOf(() => contextInFormat(ctx, "cohere", { provider: "x", modelId: "y" }));
    expect(error.code).toBe("unsupported_format");
    expect(error.details).toEqual({ formats: [...CONTEXT_FORMATS] });
  });
});

describe("query values", () => {
  it("parses a format and a provider/model reference", () => {
    expect(parseContextFormat("openai-responses")).toBe("openai-responses");
    expect(codeOf(() => parseContextFormat("xml")).code).toBe("unsupported_format");
    expect(parseModelRef("anthropic/claude-sonnet-4-5")).toEqual({
      provider: "anthropic",
      modelId: "claude-sonnet-4-5",
    });
    expect(parseModelRef("openrouter/anthropic/claude-sonnet-4.5")).toEqual({
      provider: "openrouter",
      modelId: "anthropic/claude-sonnet-4.5",
    });
    for (const bad of ["claude", "/claude", "anthropic/"])
      expect(codeOf(() => parseModelRef(bad)).code).toBe("invalid_request");
  });
});

describe("ProviderMessageEntryInput", () => {
  it("takes an append of a provider's message and names a bad format", () => {
    const entry = {
      type: "message",
      format: "anthropic",
      message: { role: "user", content: "hi" },
      id: "e1",
    };
    expect(ProviderMessageEntryInput.parse(entry)).toEqual(entry);
    const bad = ProviderMessageEntryInput.safeParse({ ...entry, format: "cohere" });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(["format"]);
  });
});

describe("AI SDK in", () => {
  it("refuses an invalid message naming the field", () => {
    const error = codeOf(() =>
      fromAISDK({
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: 1, toolName: "read", output: { type: "text", value: "x" } },
        ],
      }),
    );
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain("message.content.0.toolCallId");
    expect(
      codeOf(() => convertProviderMessage("ai-sdk", { role: "system", content: "x" })).message,
    ).toContain("message.role");
    expect(
      codeOf(() =>
        fromAISDK({ role: "user", content: [{ type: "image", image: "https://example.com/a.png" }] }),
      ).message,
    ).toContain("message.content.0.image");
  });

  it("reads a list of messages, an OpenAI reasoning item split in parts as one block", () => {
    const read = fromAISDK(
      [
        {
          role: "assistant",
          content: [
            {
              type: "reasoning",
              text: "First.",
              providerOptions: { openai: { itemId: "rs_1", reasoningEncryptedContent: "enc" } },
            },
            { type: "reasoning", text: "Second.", providerOptions: { openai: { itemId: "rs_1" } } },
            { type: "text", text: "Done.", providerOptions: { openai: { itemId: "msg_1" } } },
          ],
        },
      ],
      { model: { provider: "openai", modelId: "gpt-5" }, timestamp: 3 },
    );
    expect(read[0]).toMatchObject({
      api: "openai-responses",
      content: [
        {
          type: "thinking",
          thinking: "First.\n\nSecond.",
          thinkingSignature: JSON.stringify({
            type: "reasoning",
            id: "rs_1",
            summary: [
              { type: "summary_text", text: "First." },
              { type: "summary_text", text: "Second." },
            ],
            encrypted_content: "enc",
          }),
        },
        { type: "text", text: "Done.", textSignature: JSON.stringify({ v: 1, id: "msg_1" }) },
      ],
    });
  });
});

describe("AI SDK UI messages", () => {
  it("take the session's model when none is named", () => {
    const ctx = {
      ...context([user("Hi."), assistant([thinking("Plan.", "U0lH"), text("Yo.")], GEMINI)]),
      model: { provider: "google", modelId: GEMINI.model },
    };
    const part = toAISDKUIMessages(ctx).messages[1]?.parts[1];
    expect(part).toEqual({
      type: "reasoning",
      text: "Plan.",
      state: "done",
      providerMetadata: { google: { thoughtSignature: "U0lH" } },
    });
  });
});
