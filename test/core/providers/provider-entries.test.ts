import { describe, expect, it } from "vitest";
import type { StoredEntry } from "../../../src/core/entries";
import { SessionError } from "../../../src/core/errors";
import { MemoryRepo } from "../../../src/core/memory";
import { AppendEntryInput } from "../../../src/core/providers/entry-input";
import type { Conversation, ProviderAppendView } from "../../../src/core/providers/provider-entries";
import { expandProviderEntries, NO_CONVERSATION } from "../../../src/core/providers/provider-entries";
import { ANTHROPIC, assistant, call, user } from "./support";

const reply = assistant([call("toolu_1", "read", { path: "a.ts" })], ANTHROPIC);

const toolResults = (id: string, text = "done") => ({
  role: "user",
  content: [{ type: "tool_result", tool_use_id: id, content: text }],
});

/** A store holding nothing but the conversation at its head. */
function view(
  at: Conversation,
  stored: Record<string, StoredEntry> = {},
): ProviderAppendView & { asked: string[] } {
  const asked: string[] = [];
  return {
    leafId: "head",
    asked,
    load: (id) => stored[id],
    conversationAt: (id) => {
      asked.push(id);
      return id === "head" ? at : NO_CONVERSATION;
    },
  };
}

describe("expandProviderEntries", () => {
  it("returns a batch without provider messages as it is, asking the store nothing", () => {
    const batch = [{ type: "message", message: user("hi") }];
    const store = view(NO_CONVERSATION);
    expect(expandProviderEntries(batch, store)).toBe(batch);
    expect(store.asked).toEqual([]);
  });

  it("reads tool results against the conversation at the head, recorded as its model", () => {
    const store = view({ messages: [user("go"), reply], model: { provider: "anthropic", modelId: "m-1" } });
    const [entry] = expandProviderEntries(
      [{ type: "message", format: "anthropic", id: "r", message: toolResults("toolu_1") }],
      store,
    ) as Array<{ id: string; message: Record<string, unknown> }>;
    expect(entry).toMatchObject({
      type: "message",
      id: "r",
      message: { role: "toolResult", toolName: "read" },
    });
    expect(entry).not.toHaveProperty("format");
    expect(store.asked).toEqual(["head"]);
  });

  it("reads each entry of a batch against the ones before it, and names a failing entry", () => {
    const store = view(NO_CONVERSATION);
    const out = expandProviderEntries(
      [
        { type: "model_change", provider: "anthropic", modelId: "claude-x" },
        { type: "message", message: reply },
        { type: "message", format: "anthropic", message: toolResults("toolu_1") },
        {
          type: "message",
          format: "anthropic",
          message: { role: "assistant", content: [{ type: "text", text: "ok" }] },
        },
      ],
      store,
    ) as Array<{ message?: Record<string, unknown> }>;
    expect(out[2]?.message).toMatchObject({ toolName: "read" });
    // The reply in the batch set the model the next message is recorded as.
    expect(out[3]?.message).toMatchObject({ provider: "anthropic", model: ANTHROPIC.model });

    let error: unknown;
    try {
      expandProviderEntries(
        [
          { type: "message", message: user("x") },
          { type: "message", format: "gemini", message: { role: "model", parts: "no" } },
        ],
        store,
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SessionError);
    expect((error as SessionError).message).toMatch(/^entry 1: invalid gemini message: message\.parts/);
    expect((error as SessionError).details).toEqual([
      expect.objectContaining({ path: [1, "message", "parts"] }),
    ]);
  });

  it("reads a resend at the parent it was stored under, with the stored message's time", () => {
    const earlier = {
      type: "message",
      id: "r",
      parentId: "call",
      timestamp: "2026-01-01T00:00:00.000Z",
      seq: 3,
      message: {
        role: "toolResult",
        toolCallId: "toolu_1",
        toolName: "read",
        content: [],
        isError: false,
        timestamp: 42,
      },
    } as StoredEntry;
    const store: ProviderAppendView = {
      leafId: "later",
      load: (id) => (id === "r" ? earlier : undefined),
      conversationAt: (id) => (id === "call" ? { messages: [reply], model: null } : NO_CONVERSATION),
    };
    const [entry] = expandProviderEntries(
      [{ type: "message", format: "anthropic", id: "r", message: toolResults("toolu_1", "") }],
      store,
    ) as Array<{ message: Record<string, unknown> }>;
    expect(entry?.message).toMatchObject({ toolName: "read", timestamp: 42 });
  });
});

describe("AppendEntryInput", () => {
  it("takes our messages, provider messages by their format, and every other entry", () => {
    expect(AppendEntryInput.safeParse({ type: "message", message: user("hi") }).success).toBe(true);
    expect(AppendEntryInput.safeParse({ type: "message", format: "gemini", message: 5 }).success).toBe(true);
    expect(AppendEntryInput.safeParse({ type: "label", targetId: "x" }).success).toBe(true);
    const unknown = AppendEntryInput.safeParse({ type: "message", format: "cohere", message: {} });
    expect(unknown.error?.issues[0]).toMatchObject({ code: "invalid_union", path: ["format"] });
    const badModel = AppendEntryInput.safeParse({
      type: "message",
      format: "gemini",
      message: {},
      model: "x",
    });
    expect(badModel.error?.issues[0]?.path).toEqual(["model"]);
  });
});

describe("Session over memory", () => {
  it("answers the context in a format for the session's model, or the one named", async () => {
    const session = await new MemoryRepo().create({ systemPrompt: "S." });
    await session.appendMessage(user("Hi."));
    await expect(session.contextIn("openai-chat")).rejects.toMatchObject({ code: "invalid_request" });
    await expect(session.contextIn("cohere" as "gemini")).rejects.toMatchObject({
      code: "unsupported_format",
    });
    expect(
      await session.contextIn("openai-chat", { model: { provider: "openai", modelId: "gpt-4o" } }),
    ).toEqual({
      messages: [
        { role: "system", content: "S." },
        { role: "user", content: "Hi." },
      ],
    });
    await session.appendModelChange("google", "gemini-2.5-pro");
    expect(await session.contextIn("gemini")).toEqual({
      systemInstruction: { parts: [{ text: "S." }] },
      contents: [{ role: "user", parts: [{ text: "Hi." }] }],
    });
  });

  it("names the results of a turn stored as one reply per call from the call each answers", async () => {
    const session = await new MemoryRepo().create();
    await session.appendMessage(user("Read, then write."));
    await session.appendMessage(assistant([call("A", "read")], ANTHROPIC));
    await session.appendMessage(assistant([call("B", "write")], ANTHROPIC));
    const [read] = await session.appendProviderMessage("anthropic", toolResults("A"));
    expect(read?.message).toMatchObject({ role: "toolResult", toolCallId: "A", toolName: "read" });
    const [written] = await session.appendProviderMessage("openai-chat", {
      role: "tool",
      tool_call_id: "B",
      content: "done",
    });
    expect(written?.message).toMatchObject({ role: "toolResult", toolCallId: "B", toolName: "write" });
  });

  it("appends a provider message chained under derived ids; a resend is a replay", async () => {
    const session = await new MemoryRepo().create();
    await session.appendMessage(user("go"));
    await session.appendMessage(reply);
    const turn = {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: "done" },
        { type: "text", text: "next" },
      ],
    };
    const first = await session.appendProviderMessage("anthropic", turn, { id: "t" });
    expect(first.map((e) => [e.id, e.message.role])).toEqual([
      ["t", "toolResult"],
      ["t:1", "user"],
    ]);
    await session.appendMessage(user("more"));
    const again = await session.appendProviderMessage("anthropic", turn, { id: "t" });
    expect(again).toEqual(first);
    expect((await session.getEntries()).length).toBe(5);
    await expect(
      session.appendProviderMessage("anthropic", turn, { parentId: "nowhere" }),
    ).rejects.toMatchObject({ code: "parent_not_found" });
    await expect(
      session.appendProviderMessage("anthropic", { role: "user", content: 5 }),
    ).rejects.toMatchObject({
      code: "invalid_request",
    });
    expect((await session.getEntries()).length).toBe(5);
    // A provider's message handed to appendEntries is converted as it is appended, never stored as
    // if it were ours.
    const batch = await session.appendEntries([
      { type: "message", message: user("fine") },
      { type: "message", format: "gemini", message: { role: "model", parts: [{ text: "hi" }] } },
    ]);
    expect(batch.entries.map((e) => (e.type === "message" ? e.message.role : e.type))).toEqual([
      "user",
      "assistant",
    ]);
    expect(batch.entries[1]).not.toHaveProperty("format");
    expect((await session.getEntries()).length).toBe(7);
  });
});
