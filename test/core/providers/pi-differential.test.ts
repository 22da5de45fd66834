import { stream } from "@mariozechner/pi-ai";
import { convertToLlm } from "@mariozechner/pi-coding-agent";
import { describe, expect, it } from "vitest";
import type { SessionContext } from "../../../src/core/context";
import type { AgentMessage } from "../../../src/core/messages";
import type { TargetModel } from "../../../src/core/providers/target";
import { toAnthropic } from "../../../src/core/providers/to-anthropic";
import { toGemini } from "../../../src/core/providers/to-gemini";
import { toOpenAIChat } from "../../../src/core/providers/to-openai-chat";
import { toOpenAIResponses } from "../../../src/core/providers/to-openai-responses";
import {
  ANTHROPIC,
  assistant,
  call,
  context,
  GEMINI,
  image,
  OPENAI_CHAT,
  OPENAI_RESPONSES,
  result,
  type Source,
  text,
  thinking,
  user,
} from "./support";

/*
 * The same sessions through pi's own converters (pi-coding-agent's `convertToLlm`, then pi-ai's
 * provider code reached through its public `stream`, stopped at its `onPayload` hook before any
 * network) and through ours. Where both are right they must agree, after spelling differences
 * the APIs treat alike are evened out; where pi has a known bug, the test shows pi's payload has
 * it and ours does not.
 */

type Api = "openai-completions" | "openai-responses" | "anthropic-messages" | "google-generative-ai";

const GEMINI_2: Source = { ...GEMINI, model: "gemini-2.5-flash" };

async function piPayload(
  api: Api,
  source: Source,
  ctx: SessionContext,
  imageInput = true,
): Promise<Record<string, unknown>> {
  let captured: Record<string, unknown> | undefined;
  const model = {
    id: source.model,
    name: source.model,
    api,
    provider: source.provider,
    baseUrl: "http://127.0.0.1:9",
    reasoning: false,
    input: imageInput ? ["text", "image"] : ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 100_000,
    maxTokens: 4096,
  };
  const piContext = { systemPrompt: ctx.systemPrompt, messages: convertToLlm(ctx.messages as never) };
  const events = stream(
    model as never,
    piContext as never,
    {
      apiKey: "test",
      cacheRetention: "none",
      onPayload: (payload: unknown) => {
        captured = payload as Record<string, unknown>;
        throw new Error("captured");
      },
    } as never,
  );
  await events.result();
  if (!captured) throw new Error(`pi-ai built no payload for ${api}`);
  return captured;
}

function target(source: Source, imageInput = true): TargetModel {
  return { provider: source.provider, api: source.api, modelId: source.model, imageInput };
}

type Json = Record<string, unknown>;
const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** Chat: a string content is one text part. */
function evenChat(messages: Json[]): Json[] {
  return clone(messages).map((m) =>
    m.role === "user" && typeof m.content === "string"
      ? { ...m, content: [{ type: "text", text: m.content }] }
      : m,
  );
}

/** Responses: the system prompt as `instructions`, and an assistant text under an id pi made up as a plain message. */
function evenResponses(request: { instructions?: string; input: Json[] }): {
  instructions?: string;
  input: Json[];
} {
  const input = clone(request.input);
  let instructions = request.instructions;
  if (input[0]?.role === "system" || input[0]?.role === "developer")
    instructions = (input.shift() as Json).content as string;
  return {
    instructions,
    input: input.map((item) => {
      const content = item.content as Array<{ text: string }>;
      if (item.type === "message" && item.role === "assistant" && /^msg_\d+$/.test(String(item.id))) {
        return { role: "assistant", content: content.map((c) => c.text).join("") };
      }
      return item;
    }),
  };
}

/** Anthropic: the system prompt as a string, string content as a text block, turns of one role in a row as one. */
function evenAnthropic(request: { system?: unknown; messages: Json[] }): {
  system?: string;
  messages: Json[];
} {
  const system = Array.isArray(request.system)
    ? (request.system as Array<{ text: string }>).map((b) => b.text).join("")
    : (request.system as string | undefined);
  const messages: Json[] = [];
  for (const m of clone(request.messages)) {
    const content =
      typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as unknown[]);
    const last = messages.at(-1);
    if (last && last.role === m.role) (last.content as unknown[]).push(...content);
    else messages.push({ role: m.role, content });
  }
  return { system, messages };
}

async function expectSameAsPi(
  ctx: SessionContext,
  apis: Api[] = ["openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai"],
  imageInput = true,
) {
  for (const api of apis) {
    if (api === "openai-completions") {
      const pi = await piPayload(api, OPENAI_CHAT, ctx, imageInput);
      expect(evenChat(toOpenAIChat(ctx, target(OPENAI_CHAT, imageInput)).messages as never)).toEqual(
        evenChat(pi.messages as Json[]),
      );
    } else if (api === "openai-responses") {
      const pi = await piPayload(api, OPENAI_RESPONSES, ctx, imageInput);
      expect(evenResponses(toOpenAIResponses(ctx, target(OPENAI_RESPONSES, imageInput)) as never)).toEqual(
        evenResponses({ input: pi.input as Json[] }),
      );
    } else if (api === "anthropic-messages") {
      const pi = await piPayload(api, ANTHROPIC, ctx, imageInput);
      expect(evenAnthropic(toAnthropic(ctx, target(ANTHROPIC, imageInput)) as never)).toEqual(
        evenAnthropic(pi as { system?: unknown; messages: Json[] }),
      );
    } else {
      const pi = await piPayload(api, GEMINI_2, ctx, imageInput);
      expect(clone(toGemini(ctx, target(GEMINI_2, imageInput)).contents)).toEqual(pi.contents);
    }
  }
}

describe("agrees with pi's converters", () => {
  it("on tool turns and images", async () => {
    const messages = (source: Source): AgentMessage[] => [
      user("Hi"),
      assistant([text("Reading."), call("c1", "read", { p: 1 }), call("c2", "read", { p: 2 })], source),
      result("c1", "read", "one"),
      result("c2", "read", [text("two"), image()], true),
      user([text("see"), image()]),
      assistant([text("Seen.")], source),
    ];
    await expectSameAsPi(context(messages(OPENAI_CHAT)), ["openai-completions"]);
    await expectSameAsPi(context(messages(OPENAI_RESPONSES)), ["openai-responses"]);
    await expectSameAsPi(context(messages(ANTHROPIC)), ["anthropic-messages"]);
    await expectSameAsPi(context(messages(GEMINI_2)), ["google-generative-ai"]);
  });

  it("on pi's own messages", async () => {
    await expectSameAsPi(
      context([
        { role: "compactionSummary", summary: "Earlier.", tokensBefore: 9, timestamp: 1 },
        { role: "branchSummary", summary: "Elsewhere.", fromId: "e", timestamp: 2 },
        { role: "custom", customType: "n", content: [text("Note.")], display: true, timestamp: 3 },
        { role: "bashExecution", command: "false", output: "", exitCode: 1, timestamp: 4 },
        { role: "bashExecution", command: "ls", output: "x", cancelled: true, timestamp: 5 },
        user("Go on."),
      ]),
    );
  });

  it("on signed thinking sent back to the model that wrote it", async () => {
    const reasoning = JSON.stringify({
      type: "reasoning",
      id: "rs_1",
      summary: [{ type: "summary_text", text: "Plan." }],
      encrypted_content: "enc",
    });
    await expectSameAsPi(
      context([
        user("Go."),
        assistant(
          [
            thinking("Plan.", reasoning),
            text("Done.", JSON.stringify({ v: 1, id: "msg_abc" })),
            call("c|fc_1", "read"),
          ],
          OPENAI_RESPONSES,
        ),
        result("c|fc_1", "read", "r"),
      ]),
      ["openai-responses"],
    );
    await expectSameAsPi(
      context([
        user("Go."),
        assistant([thinking("Plan.", "SIG"), thinking("", "REDACTED", true), text("Done.")], ANTHROPIC),
      ]),
      ["anthropic-messages"],
    );
    await expectSameAsPi(
      context([
        user("Go."),
        assistant(
          [
            thinking("Plan.", "U0lH"),
            text("Done.", "VEVY"),
            { ...call("c", "read"), thoughtSignature: "Q0FMTA==" },
          ],
          GEMINI_2,
        ),
        result("c", "read", "r"),
      ]),
      ["google-generative-ai"],
    );
  });

  it("on another model's thinking", async () => {
    const other: Source = { provider: "xai", api: "openai-completions", model: "grok" };
    await expectSameAsPi(
      context([
        user("Go."),
        assistant([thinking("Readable."), thinking("x", "OPAQUE", true), text("Done.")], other),
        user("More."),
      ]),
      ["openai-responses", "anthropic-messages", "google-generative-ai"],
    );
  });

  it("on calls left without a result, and images for a model that reads none", async () => {
    const messages = (source: Source): AgentMessage[] => [
      user([text("Look"), image()]),
      assistant([call("a", "read")], source),
      user("Stop."),
      assistant([call("b", "shot")], source),
    ];
    await expectSameAsPi(context(messages(OPENAI_CHAT)), ["openai-completions"], false);
    await expectSameAsPi(context(messages(ANTHROPIC)), ["anthropic-messages"], false);
    await expectSameAsPi(context(messages(GEMINI_2)), ["google-generative-ai"], false);
  });
});

describe("differs from pi where pi's payload is refused", () => {
  it("leaves out an errored turn's tool results (pi keeps them: 400 unexpected tool_use_id)", async () => {
    const ctx = context([
      user("Go."),
      assistant([call("dead", "read")], ANTHROPIC, "error"),
      result("dead", "read", "stale"),
      user("Again."),
    ]);
    const pi = JSON.stringify(await piPayload("anthropic-messages", ANTHROPIC, ctx));
    expect(pi).toContain('"tool_use_id":"dead"');
    expect(pi).not.toContain('"type":"tool_use"');
    expect(JSON.stringify(toAnthropic(ctx, target(ANTHROPIC)))).not.toContain("dead");
  });

  it("keeps two long ids with one 64-character prefix apart (pi sends both calls under one id)", async () => {
    const prefix = "y".repeat(70);
    const ctx = context([
      user("Go."),
      assistant([call(`${prefix}1`, "read"), call(`${prefix}2`, "read")], OPENAI_RESPONSES),
      result(`${prefix}1`, "read", "one"),
      result(`${prefix}2`, "read", "two"),
    ]);
    const ids = (messages: Json[]) =>
      messages.flatMap((m) =>
        (Array.isArray(m.content) ? (m.content as Json[]) : [])
          .filter((b) => b.type === "tool_use")
          .map((b) => b.id),
      );
    const pi = await piPayload("anthropic-messages", ANTHROPIC, ctx);
    expect(new Set(ids(pi.messages as Json[])).size).toBe(1);
    expect(new Set(ids(toAnthropic(ctx, target(ANTHROPIC)).messages as never)).size).toBe(2);
  });

  it("signs another model's function calls for Gemini 3 (pi sends none: 400 missing thought_signature)", async () => {
    const ctx = context([user("Go."), assistant([call("c", "read")], ANTHROPIC), result("c", "read", "r")]);
    const pi = await piPayload("google-generative-ai", GEMINI, ctx);
    expect(JSON.stringify(pi.contents)).not.toContain("thoughtSignature");
    expect(toGemini(ctx, target(GEMINI)).contents[1]?.parts[0]).toMatchObject({
      thoughtSignature: "skip_thought_signature_validator",
    });
  });

  it("drops a reasoning item nothing follows (pi sends it: 400 reasoning without its required following item)", async () => {
    const reasoning = JSON.stringify({
      type: "reasoning",
      id: "rs_1",
      summary: [],
      encrypted_content: "enc",
    });
    const ctx = context([
      user("Go."),
      assistant([thinking("", reasoning)], OPENAI_RESPONSES),
      user("Again."),
    ]);
    const pi = await piPayload("openai-responses", OPENAI_RESPONSES, ctx);
    expect((pi.input as Json[]).some((item) => item.type === "reasoning")).toBe(true);
    expect(
      toOpenAIResponses(ctx, target(OPENAI_RESPONSES)).input.some(
        (item) => "type" in item && item.type === "reasoning",
      ),
    ).toBe(false);
  });
});
