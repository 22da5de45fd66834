import { describe, expect, it } from "vitest";
import type { AgentMessage, ThinkingContent } from "../../../src/core/messages";
import {
  EMPTY_ERROR_RESULT_TEXT,
  NO_RESULT_TEXT,
  TOOL_IMAGE_NOTE,
  USER_IMAGE_NOTE,
} from "../../../src/core/providers/normalize";
import { BRANCH_SUMMARY_PREFIX, COMPACTION_SUMMARY_PREFIX } from "../../../src/core/providers/pi-messages";
import type { ContextFormat } from "../../../src/core/providers/target";
import { toAnthropic } from "../../../src/core/providers/to-anthropic";
import { toGemini } from "../../../src/core/providers/to-gemini";
import { toOpenAIChat } from "../../../src/core/providers/to-openai-chat";
import {
  ANTHROPIC,
  assistant,
  call,
  context,
  convert,
  FORMATS,
  facts,
  GEMINI,
  image,
  OPENAI_CHAT,
  OPENAI_RESPONSES,
  result,
  type Source,
  TARGET_SOURCE,
  text,
  thinking,
  user,
} from "./support";

/** Whether a target's tool results carry an error flag of their own. */
const ERROR_FLAG: Record<ContextFormat, boolean> = {
  "openai-chat": false,
  "openai-responses": false,
  anthropic: true,
  gemini: true,
  "ai-sdk": true,
  "ai-sdk-ui": true,
};

/** Tool-call ids each target accepts (Gemini gets none unless the model needs them). */
const ID_RULE: Record<ContextFormat, RegExp | undefined> = {
  "openai-chat": /^[A-Za-z0-9_-]{1,40}$/,
  "openai-responses": /^[A-Za-z0-9_-]{1,64}$/,
  anthropic: /^[A-Za-z0-9_-]{1,64}$/,
  gemini: undefined,
  "ai-sdk": /^[A-Za-z0-9_-]{1,40}$/,
  "ai-sdk-ui": /^[A-Za-z0-9_-]{1,40}$/,
};

/** A signed thinking block as the target's own API returns it (pi-ai's conventions). */
function ownThinking(format: ContextFormat, value = "Weigh the options."): ThinkingContent {
  switch (format) {
    case "openai-chat":
      return thinking(value, "reasoning_content");
    case "openai-responses":
      return thinking(
        value,
        JSON.stringify({
          type: "reasoning",
          id: "rs_1",
          summary: [{ type: "summary_text", text: value }],
          encrypted_content: "gAAAA-encrypted",
        }),
      );
    case "gemini":
      return thinking(value, "c2lnbmF0dXJlLWJ5dGVz");
    default:
      return thinking(value, "EqQBCgIYAhIM-anthropic-signature");
  }
}

function otherModel(source: Source): Source {
  return { ...source, model: `${source.model}-previous` };
}

describe.each(FORMATS)("%s", (format) => {
  const own = TARGET_SOURCE[format];

  describe("1. thinking goes back only to the model that wrote it", () => {
    it("replays signed thinking to the same provider, API and model", () => {
      const block = ownThinking(format);
      const f = facts(format, context([user("Plan it."), assistant([block, text("Done.")], own)]));
      expect(f.replayed).toHaveLength(1);
      expect(f.replayed[0]?.text).toBe("Weigh the options.");
      if (format !== "openai-chat") expect(f.replayed[0]?.signature).toBeTruthy();
      expect(f.texts).toEqual(["Plan it.", "Done."]);
    });

    it("sends another model's readable thinking as plain text and drops its opaque reasoning", () => {
      const ctx = context([
        user("Plan it."),
        assistant(
          [
            ownThinking(format, "Readable plan."),
            thinking("[Reasoning redacted]", "OPAQUE-REDACTED", true),
            text("Done."),
          ],
          otherModel(own),
        ),
      ]);
      const f = facts(format, ctx);
      expect(f.replayed).toEqual([]);
      // A chat UI shows another model's thinking as reasoning, without its signature; OpenAI Chat
      // joins an assistant turn's texts.
      const expected =
        format === "ai-sdk-ui" ? ["Plan it.", "Done."] : ["Plan it.", "Readable plan.", "Done."];
      expect(f.texts.join("\n\n")).toBe(expected.join("\n\n"));
      const json = JSON.stringify(convert(format, ctx));
      expect(json).not.toContain("OPAQUE-REDACTED");
      expect(json).not.toContain("EqQBCgIYAhIM");
      expect(json).not.toContain("encrypted");
      expect(json).not.toContain("c2lnbmF0dXJl");
    });

    it("counts a different API of the same provider and model as another model", () => {
      if (format === "ai-sdk" || format === "ai-sdk-ui") return; // the AI SDK picks the API itself
      const other = { ...own, api: `${own.api}-elsewhere` };
      const f = facts(
        format,
        context([user("Plan it."), assistant([ownThinking(format), text("Done.")], other)]),
      );
      expect(f.replayed).toEqual([]);
    });
  });

  describe("2. tool-call ids are rewritten per target, call and result alike, without collisions", () => {
    const prefix = "x".repeat(70);
    const ids = [
      `call_R3sp|fc_${"A+/=".repeat(110)}`,
      `${prefix}-first`,
      `${prefix}-second`,
      "functions.read:0",
      "",
    ];
    const ctx = context([
      user("Go."),
      assistant(
        ids.map((id, i) => call(id, `tool${i}`, { n: i })),
        OPENAI_RESPONSES,
      ),
      ...ids.map((id, i) => result(id, `tool${i}`, `out ${i}`)),
      user("Next."),
    ]);

    it("gives every call a valid, unique id and its result the same one", () => {
      const f = facts(format, ctx);
      expect(f.calls.map((c) => c.name)).toEqual(["tool0", "tool1", "tool2", "tool3", "tool4"]);
      expect(f.results.map((r) => r.text)).toEqual(["out 0", "out 1", "out 2", "out 3", "out 4"]);
      const rule = ID_RULE[format];
      if (!rule) {
        expect(f.calls.every((c) => c.id === undefined)).toBe(true);
        expect(f.results.map((r) => r.name)).toEqual(f.calls.map((c) => c.name));
        return;
      }
      const callIds = f.calls.map((c) => c.id as string);
      for (const id of callIds) expect(id).toMatch(rule);
      expect(new Set(callIds).size).toBe(ids.length);
      expect(f.results.map((r) => r.id)).toEqual(callIds);
    });

    it("sends a valid, unique id unchanged", () => {
      const f = facts(
        format,
        context([
          user("Go."),
          assistant([call("toolu_01A", "read")], own),
          result("toolu_01A", "read", "ok"),
        ]),
      );
      if (ID_RULE[format]) expect(f.calls[0]?.id).toBe("toolu_01A");
      expect(f.results[0]?.text).toBe("ok");
    });

    it("takes a result naming only the call_id of a Responses call as its answer", () => {
      const f = facts(
        format,
        context([user("Go."), assistant([call("call_9|fc_9", "read")], own), result("call_9", "read", "ok")]),
      );
      expect(f.results.map((r) => r.text)).toEqual(["ok"]);
    });

    it("keeps apart a provider's ids reused in later turns", () => {
      const f = facts(
        format,
        context([
          user("Go."),
          assistant([call("call_0", "read")], own),
          result("call_0", "read", "first"),
          assistant([call("call_0", "read")], own),
          result("call_0", "read", "second"),
        ]),
      );
      expect(f.results.map((r) => r.text)).toEqual(["first", "second"]);
      if (ID_RULE[format]) {
        expect(new Set(f.calls.map((c) => c.id)).size).toBe(2);
        expect(f.results.map((r) => r.id)).toEqual(f.calls.map((c) => c.id));
      }
    });
  });

  describe("3. a call without a result is answered with an error before the next turn", () => {
    it("answers a call left open before a user message, and one at the very end", () => {
      const f = facts(
        format,
        context([
          user("Go."),
          assistant([call("c1", "read", { path: "a" })], own),
          user("Never mind."),
          assistant([call("c2", "write")], own),
        ]),
      );
      expect(f.results.map((r) => r.text)).toEqual([NO_RESULT_TEXT, NO_RESULT_TEXT]);
      if (ERROR_FLAG[format]) expect(f.results.every((r) => r.isError)).toBe(true);
      if (format !== "ai-sdk-ui") {
        const turns = f.roles.join(" ");
        expect(turns.startsWith("user assistant")).toBe(true);
        expect(f.roles.at(-2)).toBe("assistant");
        expect(f.texts).toContain("Never mind.");
      }
    });

    it("answers only the calls that got no result", () => {
      const f = facts(
        format,
        context([
          user("Go."),
          assistant([call("a", "read"), call("b", "read")], own),
          result("b", "read", "B"),
        ]),
      );
      expect(f.results.map((r) => r.text)).toEqual([NO_RESULT_TEXT, "B"]);
    });

    it("says a tool failed when its error result has no output (Anthropic refuses an empty one)", () => {
      const f = facts(
        format,
        context([
          user("Go."),
          assistant([call("a", "run"), call("b", "run"), call("c", "run")], own),
          result("a", "run", "", true),
          result("b", "run", [], true),
          result("c", "run", ""),
        ]),
      );
      expect(f.results.map((r) => r.text)).toEqual([EMPTY_ERROR_RESULT_TEXT, EMPTY_ERROR_RESULT_TEXT, ""]);
      if (ERROR_FLAG[format]) expect(f.results.map((r) => r.isError)).toEqual([true, true, false]);
    });
  });

  describe("4. an errored or aborted turn is left out with its tool results", () => {
    it.each(["error", "aborted"])("drops a %s turn and the results of its calls", (stopReason) => {
      const ctx = context([
        user("Go."),
        assistant([text("Half an answer"), call("dead", "read")], own, stopReason),
        result("dead", "read", "stale output"),
        user("Try again."),
        assistant([text("Whole answer.")], own),
      ]);
      const f = facts(format, ctx);
      expect(f.calls).toEqual([]);
      expect(f.results).toEqual([]);
      expect(f.texts).toEqual(["Go.", "Try again.", "Whole answer."]);
      expect(JSON.stringify(convert(format, ctx))).not.toContain("stale output");
    });
  });

  describe("5. results are grouped as the API wants them, in call order", () => {
    const ctx = context([
      user("Read three files."),
      assistant(
        [call("c1", "read", { p: 1 }), call("c2", "read", { p: 2 }), call("c3", "read", { p: 3 })],
        own,
      ),
      result("c3", "read", "three"),
      result("c1", "read", "one"),
      result("c2", "read", "two", true),
      user("Summarize."),
    ]);

    it("answers the calls in the order they were made", () => {
      const f = facts(format, ctx);
      expect(f.results.map((r) => r.text)).toEqual(["one", "two", "three"]);
      if (ERROR_FLAG[format]) expect(f.results.map((r) => r.isError)).toEqual([false, true, false]);
    });

    it("meets the API's turn rules", () => {
      const out = convert(format, ctx) as unknown as Record<string, unknown>;
      if (format === "anthropic") {
        const messages = toAnthropic(ctx, { provider: "anthropic", modelId: own.model }).messages;
        expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
        expect(messages[2]?.content.map((b) => b.type)).toEqual([
          "tool_result",
          "tool_result",
          "tool_result",
          "text",
        ]);
      } else if (format === "gemini") {
        const contents = toGemini(ctx, { provider: "google", modelId: own.model }).contents;
        expect(contents.map((c) => c.role)).toEqual(["user", "model", "user", "user"]);
        expect(contents[2]?.parts.every((p) => "functionResponse" in p)).toBe(true);
        expect(contents[2]?.parts).toHaveLength(3);
      } else if (format === "openai-chat") {
        const roles = (out.messages as Array<{ role: string }>).map((m) => m.role);
        expect(roles).toEqual(["system", "user", "assistant", "tool", "tool", "tool", "user"]);
      } else if (format === "openai-responses") {
        const kinds = (out.input as Array<{ type?: string; role?: string }>).map((i) => i.type ?? i.role);
        expect(kinds).toEqual([
          "user",
          "function_call",
          "function_call",
          "function_call",
          "function_call_output",
          "function_call_output",
          "function_call_output",
          "user",
        ]);
      } else if (format === "ai-sdk") {
        const messages = out.messages as Array<{ role: string; content: unknown[] }>;
        expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
        expect(messages[2]?.content).toHaveLength(3);
      } else {
        const messages = out.messages as Array<{ role: string }>;
        expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
      }
    });
  });

  describe("6. images in tool results", () => {
    const ctx = context([
      user([text("What is on screen?"), image()]),
      assistant([call("shot", "screenshot")], own),
      result("shot", "screenshot", [text("Captured."), image()]),
    ]);

    it("go where the API reads them", () => {
      const f = facts(format, ctx);
      expect(f.results[0]?.text).toContain("Captured.");
      if (format === "openai-chat") {
        // A tool message holds text only: the image follows in a user message.
        expect(f.results[0]?.images).toBe(0);
        expect(f.images).toBe(2);
        expect(f.roles).toEqual(["user", "assistant", "tool", "user"]);
      } else {
        expect(f.results[0]?.images).toBe(1);
        expect(f.images).toBe(1);
      }
    });

    it("become a note for a model without image input", () => {
      const f = facts(format, ctx, false);
      expect(f.images).toBe(0);
      expect(f.results[0]?.images).toBe(0);
      expect(f.results[0]?.text).toContain(TOOL_IMAGE_NOTE);
      expect(f.texts).toContain(USER_IMAGE_NOTE);
    });
  });

  describe("7. empty blocks, empty messages and lone surrogates", () => {
    it("drops empty text and thinking, and messages left empty", () => {
      const f = facts(
        format,
        context([
          user(""),
          user([text("  "), text("Hello")]),
          assistant([text(""), thinking(" "), text("\n")], own),
          assistant([thinking(""), text("Hi."), text(" ")], own),
        ]),
      );
      expect(f.texts).toEqual(["Hello", "Hi."]);
      expect(f.roles).toEqual(["user", "assistant"]);
    });

    it("strips lone surrogates from every text and keeps emoji", () => {
      const lone = "\uD83D";
      const ctx = context(
        [
          user(`a${lone}b 🙂`),
          assistant([text(`c${lone}d`), call("c1", "write", { body: `e${lone}f` })], own),
          result("c1", "write", `g${lone}h`),
        ],
        `sys${lone}tem`,
      );
      const json = JSON.stringify(convert(format, ctx));
      expect(json).not.toMatch(/\\ud83d(?!\\ude42)/i);
      expect(json).toContain("🙂");
      const f = facts(format, ctx);
      expect(f.texts).toEqual(["ab 🙂", "cd"]);
      expect(f.calls[0]?.args).toEqual({ body: "ef" });
      expect(f.results[0]?.text).toBe("gh");
      if (format !== "ai-sdk-ui") expect(f.system).toBe("system");
    });
  });

  describe("pi's own messages", () => {
    it("become what pi sends for them, and roles no model knows are left out", () => {
      const messages: AgentMessage[] = [
        { role: "compactionSummary", summary: "Earlier work.", tokensBefore: 100, timestamp: 1 },
        { role: "branchSummary", summary: "Tried another way.", fromId: "e1", timestamp: 2 },
        { role: "custom", customType: "note", content: "A note.", display: false, timestamp: 3 },
        { role: "bashExecution", command: "ls", output: "a.txt", exitCode: 0, timestamp: 4 },
        { role: "bashExecution", command: "secret", output: "x", excludeFromContext: true, timestamp: 5 },
        { role: "notification", text: "Not for the model.", timestamp: 6 },
        user("Continue."),
      ];
      const f = facts(format, context(messages));
      expect(f.texts).toEqual([
        `${COMPACTION_SUMMARY_PREFIX}Earlier work.\n</summary>`,
        `${BRANCH_SUMMARY_PREFIX}Tried another way.</summary>`,
        "A note.",
        "Ran `ls`\n```\na.txt\n```",
        "Continue.",
      ]);
    });
  });
});

describe("target-specific shapes", () => {
  it("OpenAI Chat: content is null when a turn holds only tool calls", () => {
    const out = toOpenAIChat(
      context([user("Go."), assistant([call("c1", "read")], OPENAI_CHAT), result("c1", "read", "ok")]),
      { provider: "openai", modelId: "gpt-4o" },
    );
    expect(out.messages[2]).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "read", arguments: "{}" } }],
    });
  });

  it("OpenAI Chat: a reply holding only reasoning or unsigned thinking is left out", () => {
    const out = toOpenAIChat(
      context([
        user("Go."),
        assistant([thinking("Hmm.", "reasoning_content")], OPENAI_CHAT),
        user("Well?"),
        assistant([thinking("Unsigned.")], OPENAI_CHAT),
        user("And?"),
      ]),
      { provider: "openai", modelId: OPENAI_CHAT.model },
    );
    expect(out.messages.map((message) => message.role)).toEqual(["system", "user", "user", "user"]);
  });

  it("OpenAI Chat: a developer role for the system prompt on request", () => {
    const out = toOpenAIChat(
      context([user("Hi.")]),
      { provider: "openai", modelId: "o3" },
      { systemRole: "developer" },
    );
    expect(out.messages[0]).toEqual({ role: "developer", content: "You are terse." });
  });

  it("Anthropic: thinking without a signature goes as text, redacted thinking as redacted_thinking", () => {
    const out = toAnthropic(
      context([
        user("Go."),
        assistant([thinking("unsigned"), thinking("x", "DATA", true), text("ok")], ANTHROPIC),
      ]),
      { provider: "anthropic", modelId: ANTHROPIC.model },
    );
    expect(out.messages[1]?.content).toEqual([
      { type: "text", text: "unsigned" },
      { type: "redacted_thinking", data: "DATA" },
      { type: "text", text: "ok" },
    ]);
  });

  it("Anthropic: the result of a tool that printed nothing goes without content (empty text is dropped)", () => {
    const turn = (content: string | []) =>
      toAnthropic(
        context([user("Go."), assistant([call("c1", "run")], ANTHROPIC), result("c1", "run", content)]),
        { provider: "anthropic", modelId: ANTHROPIC.model },
      ).messages[2]?.content[0];
    const bare = { type: "tool_result", tool_use_id: "c1", is_error: false };
    expect(turn("")).toEqual(bare);
    expect(turn([])).toEqual(bare);
  });

  it("Anthropic: the error result of a tool that printed nothing says so (empty content is refused with is_error)", () => {
    const out = toAnthropic(
      context([user("Go."), assistant([call("c1", "run")], ANTHROPIC), result("c1", "run", "", true)]),
      { provider: "anthropic", modelId: ANTHROPIC.model },
    );
    expect(out.messages[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "c1", content: "The tool failed with no output.", is_error: true },
    ]);
  });

  it("Anthropic: an image type the API does not read becomes a note", () => {
    const out = toAnthropic(context([user([image("AAAA", "image/bmp")])]), {
      provider: "anthropic",
      modelId: "m",
    });
    expect(out.messages[0]?.content).toEqual([
      { type: "text", text: "(image omitted: image/bmp is not supported)" },
    ]);
  });

  it("Anthropic: image/jpg, which no API takes, goes as image/jpeg", () => {
    const out = toAnthropic(context([user([image("AAAA", "image/jpg")])]), {
      provider: "anthropic",
      modelId: "m",
    });
    expect(out.messages[0]?.content).toEqual([
      { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "AAAA" } },
    ]);
  });

  it("Gemini: an image type the API does not read becomes a note, image/jpg goes as image/jpeg", () => {
    const ctx = context([
      user([image("AAAA", "image/gif"), image("BBBB", "image/jpg")]),
      assistant([call("c1", "read")], ANTHROPIC),
      result("c1", "read", [text("two frames"), image("CCCC", "image/gif"), image("DDDD", "image/jpg")]),
    ]);
    for (const modelId of ["gemini-3-pro-preview", "gemini-2.5-pro"]) {
      const { contents } = toGemini(ctx, { provider: "google", modelId });
      expect(contents[0]?.parts).toEqual([
        { text: "(image omitted: image/gif is not supported)" },
        { inlineData: { mimeType: "image/jpeg", data: "BBBB" } },
      ]);
      const sent = JSON.stringify(contents);
      // Only what Gemini reads is sent as an image.
      const blobs = [...sent.matchAll(/"inlineData":\{"mimeType":"([^"]+)","data":"([^"]+)"/g)];
      expect(blobs.map((match) => match.slice(1))).toEqual([
        ["image/jpeg", "BBBB"],
        ["image/jpeg", "DDDD"],
      ]);
      expect(sent).toContain("two frames\\n(image omitted: image/gif is not supported)");
    }
  });

  it("Gemini 3: another model's function calls carry the documented stand-in signature", () => {
    const ctx = context([user("Go."), assistant([call("c1", "read"), call("c2", "read")], ANTHROPIC)]);
    const parts = toGemini(ctx, { provider: "google", modelId: "gemini-3-pro-preview" }).contents[1]?.parts;
    expect(parts).toEqual([
      { functionCall: { name: "read", args: {} }, thoughtSignature: "skip_thought_signature_validator" },
      { functionCall: { name: "read", args: {} }, thoughtSignature: "skip_thought_signature_validator" },
    ]);
    const older = toGemini(ctx, { provider: "google", modelId: "gemini-2.5-flash" }).contents[1]?.parts;
    expect(older).toEqual([
      { functionCall: { name: "read", args: {} } },
      { functionCall: { name: "read", args: {} } },
    ]);
  });

  it("Gemini 3: the model's own parallel calls go back as they came, signature on the first", () => {
    const own = assistant(
      [{ ...call("c1", "read"), thoughtSignature: "U0lHTg==" }, call("c2", "read")],
      GEMINI,
    );
    const parts = toGemini(context([user("Go."), own]), { provider: "google", modelId: GEMINI.model })
      .contents[1]?.parts;
    expect(parts).toEqual([
      { functionCall: { name: "read", args: {} }, thoughtSignature: "U0lHTg==" },
      { functionCall: { name: "read", args: {} } },
    ]);
  });

  it("Gemini: the model's reply holding only an empty signed thought is left out", () => {
    const out = toGemini(
      context([user("Go."), assistant([thinking("", "c2lnbmF0dXJl")], GEMINI), user("Well?")]),
      { provider: "google", modelId: GEMINI.model },
    );
    expect(out.contents).toEqual([
      { role: "user", parts: [{ text: "Go." }] },
      { role: "user", parts: [{ text: "Well?" }] },
    ]);
  });

  it("Gemini: models other than Gemini behind Google's API get ids, through the same map", () => {
    const out = toGemini(
      context([
        user("Go."),
        assistant([call("a|b:c", "read")], OPENAI_RESPONSES),
        result("a|b:c", "read", "ok"),
      ]),
      { provider: "google-vertex", modelId: "claude-sonnet-4-5" },
    );
    expect(out.contents[1]?.parts).toEqual([{ functionCall: { name: "read", args: {}, id: "a" } }]);
    expect(out.contents[2]?.parts).toEqual([
      { functionResponse: { name: "read", response: { output: "ok" }, id: "a" } },
    ]);
  });

  it("Gemini 2: a result's images follow its function responses in a user content", () => {
    const out = toGemini(
      context([user("Go."), assistant([call("c", "shot")], GEMINI), result("c", "shot", [image()])]),
      { provider: "google", modelId: "gemini-2.5-pro" },
    );
    expect(out.contents.slice(2)).toEqual([
      {
        role: "user",
        parts: [{ functionResponse: { name: "shot", response: { output: "(see attached image)" } } }],
      },
      {
        role: "user",
        parts: [
          { text: "Tool result image:" },
          { inlineData: { mimeType: "image/png", data: image().data } },
        ],
      },
    ]);
  });
});
