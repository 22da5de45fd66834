import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { prepareBranchSummary, prepareCompaction } from "../../src/core/compaction";
import { defaultContextEntryTransform } from "../../src/core/context";
import { SessionError } from "../../src/core/errors";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage } from "../../src/core/messages";
import type { Session } from "../../src/core/session";
import { ExtractiveSummarizer } from "../../src/core/summarizers/extractive";
import { OpenAISummarizer } from "../../src/core/summarizers/openai";
import { summaryPrompt } from "../../src/core/summarizers/prompt";
import type { Summarizer } from "../../src/core/summarizers/summarizer";
import { WorkersAISummarizer } from "../../src/core/summarizers/workers-ai";
import { estimateContextTokens, estimateTokens } from "../../src/core/tokens";
import { assistant, toolResult, user } from "../conformance/fixtures";
import { expectCode } from "../conformance/storage";

const extractive = new ExtractiveSummarizer();
const words = (n: number) => "word ".repeat(n).trim();

async function fresh(): Promise<Session> {
  return new MemoryRepo().create();
}

describe("token estimates", () => {
  it("counts chars/4, images as 1,200 tokens, tool calls by name and arguments, thinking by text", () => {
    expect(estimateTokens(user("x".repeat(40)))).toBe(10);
    expect(
      estimateTokens({
        role: "user",
        content: [
          { type: "text", text: "abcd" },
          { type: "image", data: "AAAA", mimeType: "image/png" },
        ],
        timestamp: 1,
      }),
    ).toBe(1 + 1200);
    const call = assistant("", { toolCalls: [{ id: "c", name: "read", arguments: { path: "a.ts" } }] });
    expect(estimateTokens(call)).toBe(
      Math.ceil(("read".length + JSON.stringify({ path: "a.ts" }).length) / 4),
    );
    const thinking = {
      ...assistant("ok"),
      content: [
        { type: "thinking" as const, thinking: "x".repeat(20) },
        { type: "text" as const, text: "ok" },
      ],
    };
    expect(estimateTokens(thinking)).toBe(Math.ceil(22 / 4));
    expect(estimateTokens(toolResult("c", "read", "x".repeat(8)))).toBe(2);
  });

  it("sizes a context from the last good usage plus estimates after it", () => {
    const good = assistant("a");
    good.usage.totalTokens = 500;
    const aborted = { ...assistant("b"), stopReason: "aborted" };
    aborted.usage = { ...aborted.usage, totalTokens: 9999 };
    expect(estimateContextTokens([user("x".repeat(400)), good, aborted, user("y".repeat(40))])).toBe(
      500 + 1 + 10,
    );
    expect(estimateContextTokens([user("x".repeat(400))])).toBe(100);
  });
});

describe("prepareCompaction", () => {
  async function conversation(turns: number, size = 100) {
    const session = await fresh();
    for (let i = 0; i < turns; i++) {
      await session.appendMessage(user(`q${i} ${words(size)}`));
      await session.appendMessage(assistant(`a${i} ${words(size)}`));
    }
    return session;
  }

  it("keeps at least keepRecentTokens and summarizes the rest (the start of a split turn apart)", async () => {
    const session = await conversation(10);
    const path = await session.getBranch();
    const prep = prepareCompaction(path, { keepRecentTokens: 300 });
    const firstKept = path.findIndex((e) => e.id === prep.firstKeptEntryId);
    const kept = path
      .slice(firstKept)
      .flatMap((e) => (e.type === "message" ? [estimateTokens(e.message)] : []));
    expect(kept.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(300);
    expect(prep.messagesToSummarize.length + prep.turnPrefixMessages.length).toBe(firstKept);
    expect(prep.tokensBefore).toBe(
      estimateContextTokens(path.map((e) => (e as { message: AgentMessage }).message)),
    );
  });

  it("never cuts at a tool result, and keeps settings changes before the cut with it", async () => {
    const session = await fresh();
    await session.appendMessage(user(`start ${words(200)}`));
    await session.appendMessage(
      assistant("reading", { toolCalls: [{ id: "c1", name: "read", arguments: { path: "a.ts" } }] }),
    );
    await session.appendMessage(toolResult("c1", "read", words(400)));
    await session.appendModelChange("p", "m");
    const q = await session.appendMessage(user("next"));
    await session.appendMessage(assistant(words(50)));
    const path = await session.getBranch();
    const prep = prepareCompaction(path, { keepRecentTokens: 70 });
    const cut = path.findIndex((e) => e.id === prep.firstKeptEntryId);
    expect(path[cut]?.type).toBe("model_change");
    expect(path[cut + 1]?.id).toBe(q);
    expect(prep.readFiles).toEqual(["a.ts"]);
  });

  it("cuts inside a turn longer than the budget, summarizing its start apart", async () => {
    const session = await fresh();
    await session.appendMessage(user(`old ${words(100)}`));
    await session.appendMessage(assistant(`old reply ${words(100)}`));
    await session.appendMessage(user("do the big thing"));
    for (let i = 0; i < 6; i++) {
      await session.appendMessage(
        assistant(`step ${i}`, {
          toolCalls: [{ id: `c${i}`, name: "edit", arguments: { path: `f${i}.ts` } }],
        }),
      );
      await session.appendMessage(toolResult(`c${i}`, "edit", words(300)));
    }
    const path = await session.getBranch();
    const prep = prepareCompaction(path, { keepRecentTokens: 500 });
    const cut = path.find((e) => e.id === prep.firstKeptEntryId);
    expect(cut?.type === "message" && cut.message.role).toBe("assistant");
    expect(prep.turnPrefixMessages[0]).toMatchObject({ role: "user", content: "do the big thing" });
    expect(prep.messagesToSummarize.length).toBe(2);
    expect(prep.modifiedFiles.length).toBeGreaterThan(0);
  });

  it("refuses when the leaf is a compaction or nothing would be dropped", async () => {
    const session = await conversation(2, 5);
    const path = await session.getBranch();
    expect(() => prepareCompaction(path, { keepRecentTokens: 20_000 })).toThrowError(SessionError);
    try {
      prepareCompaction(path, { keepRecentTokens: 20_000 });
    } catch (error) {
      expect((error as SessionError).code).toBe("nothing_to_compact");
    }
    await session.compact({ keepRecentTokens: 1, summary: "s" });
    await expectCode(session.compact({ keepRecentTokens: 1, summary: "again" }), "nothing_to_compact");
    await expectCode((await fresh()).compact({ summary: "s" }), "nothing_to_compact");
  });

  it("starts the search at the previous compaction's first kept entry and carries its summary and files", async () => {
    const session = await conversation(6);
    await session.appendMessage(
      assistant("r", { toolCalls: [{ id: "x", name: "read", arguments: { path: "old.ts" } }] }),
    );
    await session.appendMessage(toolResult("x", "read", "ok"));
    const first = await session.compact({ keepRecentTokens: 300, summarizer: extractive });
    for (let i = 0; i < 6; i++) {
      await session.appendMessage(user(`later ${i} ${words(100)}`));
      await session.appendMessage(assistant(`reply ${i} ${words(100)}`));
    }
    const path = await session.getBranch();
    const prep = prepareCompaction(path, { keepRecentTokens: 300 });
    expect(prep.previousSummary).toBe(first.summary);
    const firstKeptBefore = path.findIndex((e) => e.id === first.firstKeptEntryId);
    const firstSummarized = prep.messagesToSummarize[0];
    expect(firstSummarized).toEqual((path[firstKeptBefore] as { message: AgentMessage }).message);
    expect(prep.readFiles).toContain("old.ts");
  });

  it("stores the kept messages as projected with retainTail, and the context is the same either way", async () => {
    const a = await conversation(8);
    await a.appendCustomMessageEntry({ customType: "note", content: "n", display: true });
    await a.appendMessage(user("last"));
    const entry = await a.compact({ keepRecentTokens: 400, retainTail: true, summary: "S" });
    expect(entry.retainedTail?.length).toBeGreaterThan(0);
    expect(entry.firstKeptEntryId).toBeDefined();
    const withTail = await a.buildContext();
    const withoutTail = await a.buildContext({
      transforms: [
        (path) => path.map((e) => (e.id === entry.id ? { ...e, retainedTail: undefined } : e)),
        defaultContextEntryTransform,
      ],
    });
    expect(withTail.messages).toEqual(withoutTail.messages);
  });
});

describe("compacting a session", () => {
  it("replaces the dropped history by the summary in the context", async () => {
    const session = await fresh();
    for (let i = 0; i < 10; i++) {
      await session.appendMessage(user(`question ${i} ${words(100)}`));
      await session.appendMessage(assistant(`answer ${i} ${words(100)}`));
    }
    const before = await session.buildContext();
    const entry = await session.compact({ keepRecentTokens: 500, summarizer: extractive });
    expect(entry.type).toBe("compaction");
    expect(entry.summary).toContain("## Goal");
    expect(entry.summary).toContain("question 0");
    const after = await session.buildContext();
    expect(after.messages[0]).toMatchObject({
      role: "compactionSummary",
      summary: entry.summary,
      tokensBefore: entry.tokensBefore,
    });
    expect(after.messages.slice(1)).toEqual(
      before.messages.slice(before.messages.length - (after.messages.length - 1)),
    );
    expect(after.messages.length).toBeLessThan(before.messages.length);
  });

  it("writes nothing when the summarizer fails", async () => {
    const session = await fresh();
    for (let i = 0; i < 6; i++) await session.appendMessage(user(words(200)));
    const failing: Summarizer = {
      name: "broken",
      summarize: async () => Promise.reject(new Error("model down")),
    };
    const error = await expectCode(
      session.compact({ keepRecentTokens: 100, summarizer: failing }),
      "summarizer_failed",
    );
    expect(error.message).toContain("model down");
    expect((await session.getInfo()).entryCount).toBe(6);
  });

  it("writes nothing (leaf_conflict) when the branch moved off the kept part during summarization", async () => {
    const session = await fresh();
    const root = await session.appendMessage(user("root"));
    for (let i = 0; i < 6; i++) await session.appendMessage(user(words(200)));
    const moving: Summarizer = {
      name: "slow",
      async summarize() {
        await session.appendMessage(assistant("elsewhere"), { parentId: root });
        return { text: "late summary" };
      },
    };
    await expectCode(session.compact({ keepRecentTokens: 100, summarizer: moving }), "leaf_conflict");
    expect((await session.getEntries({ type: "compaction" })).length).toBe(0);
  });

  it("appends at the new leaf when the branch only grew during summarization", async () => {
    const session = await fresh();
    for (let i = 0; i < 6; i++) await session.appendMessage(user(words(200)));
    let grown = "";
    const growing: Summarizer = {
      name: "slow",
      async summarize() {
        grown = await session.appendMessage(user("meanwhile"));
        return { text: "summary" };
      },
    };
    const entry = await session.compact({ keepRecentTokens: 100, summarizer: growing });
    expect(entry.parentId).toBe(grown);
    for (let i = 0; i < 4; i++) await session.appendMessage(user(words(200)));
    await expectCode(
      session.compact({
        keepRecentTokens: 0,
        retainTail: true,
        summarizer: {
          name: "slow",
          async summarize() {
            await session.appendMessage(user("again"));
            return { text: "s" };
          },
        },
      }),
      "leaf_conflict",
    );
  });
});

describe("a branch that moves while the summary is written", () => {
  const system = (text: string, tools: string[] = []): AgentMessage => ({
    role: "system",
    content: text,
    ...(tools.length > 0 ? { toolsAdded: tools.map((name) => ({ name })) } : {}),
    timestamp: 1,
  });
  const contextTools = async (session: Session) => {
    const { messages } = await session.buildContext();
    return messages
      .filter((m) => m.role === "system")
      .flatMap((m) => ((m as { toolsAdded?: { name: string }[] }).toolsAdded ?? []).map((t) => t.name));
  };

  it("keeps the system messages written meanwhile", async () => {
    const session = await fresh();
    await session.appendMessage(system("prompt", ["read"]));
    for (let i = 0; i < 6; i++) await session.appendMessage(user(words(200)));
    const summarizer: Summarizer = {
      name: "slow",
      async summarize() {
        await session.appendMessage(system("", ["grep"]));
        await session.appendMessage(user("meanwhile"));
        return { text: "summary" };
      },
    };
    const entry = await session.compact({ keepRecentTokens: 100, summarizer });
    expect(entry.systemMessage).toMatchObject({ toolsAdded: [{ name: "read" }, { name: "grep" }] });
    expect(await contextTools(session)).toEqual(["read", "grep"]);
  });

  it("carries the system state of the branch it lands on, not of the branch left", async () => {
    const session = await fresh();
    await session.appendMessage(system("prompt", ["read"]));
    const kept: string[] = [];
    for (let i = 0; i < 6; i++) kept.push(await session.appendMessage(user(words(200))));
    await session.appendMessage(system("", ["rm_rf"]));
    await session.appendMessage(user("after the tool"));
    const summarizer: Summarizer = {
      name: "slow",
      async summarize() {
        await session.setLeafId(kept.at(-1) as string);
        await session.appendMessage(user("another way"));
        return { text: "summary" };
      },
    };
    const entry = await session.compact({ keepRecentTokens: 300, summarizer });
    expect(entry.systemMessage).toMatchObject({ toolsAdded: [{ name: "read" }] });
    expect(await contextTools(session)).toEqual(["read"]);
  });

  it("writes nothing when the branch was compacted meanwhile", async () => {
    const session = await fresh();
    for (let i = 0; i < 6; i++) await session.appendMessage(user(words(200)));
    let curated = "";
    const summarizer: Summarizer = {
      name: "slow",
      async summarize() {
        curated = (await session.compact({ keepRecentTokens: 100, summary: "CURATED" })).id;
        await session.appendMessage(user("next"));
        return { text: "auto" };
      },
    };
    await expectCode(session.compact({ keepRecentTokens: 100, summarizer }), "nothing_to_compact");
    const { messages } = await session.buildContext();
    expect(messages[0]).toMatchObject({ role: "compactionSummary", summary: "CURATED" });
    const compactions = (await session.getEntries()).filter((e) => e.type === "compaction");
    expect(compactions.map((e) => e.id)).toEqual([curated]);
  });
});

describe("branch summaries", () => {
  it("collects the entries from the old leaf back to the common ancestor", async () => {
    const session = await fresh();
    const q = await session.appendMessage(user("q"));
    const a = await session.appendMessage(assistant("a"));
    const b = await session.appendMessage(user("b"));
    const other = await session.appendMessage(assistant("other"), { parentId: q });
    const prep = prepareBranchSummary(await session.getBranch(b), await session.getBranch(other));
    expect(prep.commonAncestorId).toBe(q);
    expect(prep.entries.map((e) => e.id)).toEqual([a, b]);
    expect(
      prepareBranchSummary(await session.getBranch(b), await session.getBranch(q)).entries.map((e) => e.id),
    ).toEqual([a, b]);
    expect(prepareBranchSummary(await session.getBranch(q), await session.getBranch(b)).entries).toEqual([]);
  });

  it("summarizes the branch left under the target, which becomes the leaf", async () => {
    const session = await fresh();
    const q = await session.appendMessage(user("q"));
    await session.appendMessage(
      assistant("tried something", { toolCalls: [{ id: "c", name: "write", arguments: { path: "x.ts" } }] }),
    );
    const left = await session.appendMessage(toolResult("c", "write", "ok"));
    const result = await session.navigate(q, { summarize: true, summarizer: extractive });
    // fromId names the leaf that was left, as pi 1.6 writes it.
    expect(result.entry).toMatchObject({ type: "branch_summary", parentId: q, fromId: left });
    expect(result.entry?.summary).toContain("x.ts");
    expect(result.leafId).toBe(result.entry?.id);
    const context = await session.buildContext();
    expect(context.messages.map((m) => m.role)).toEqual(["user", "branchSummary"]);
  });

  it("writes under no parent when the target is null, fromId naming the leaf left", async () => {
    const session = await fresh();
    const q = await session.appendMessage(user("q"));
    const result = await session.navigate(null, { summarize: true, summarizer: extractive });
    expect(result.entry).toMatchObject({ parentId: null, fromId: q });
  });

  it("just moves when there is nothing to summarize, and changes nothing when the summary fails", async () => {
    const session = await fresh();
    const q = await session.appendMessage(user("q"));
    const a = await session.appendMessage(assistant("a"));
    await session.setLeafId(q);
    expect(await session.navigate(a, { summarize: true, summarizer: extractive })).toMatchObject({
      leafId: a,
      record: { targetId: a },
    });
    const failing: Summarizer = { name: "broken", summarize: async () => Promise.reject(new Error("down")) };
    await expectCode(session.navigate(q, { summarize: true, summarizer: failing }), "branch_summary_failed");
    expect(await session.getLeafId()).toBe(a);
    expect((await session.getEntries({ type: "branch_summary" })).length).toBe(0);
  });
});

describe("summarizers", () => {
  it("sends a structured prompt with tool results cut to 2,000 characters", () => {
    const prompt = summaryPrompt({
      kind: "compaction",
      messages: [
        user("please fix"),
        assistant("on it", { toolCalls: [{ id: "c", name: "read", arguments: { path: "a" } }] }),
        toolResult("c", "read", "z".repeat(5000)),
      ],
      previousSummary: "before",
      readFiles: [],
      modifiedFiles: [],
    });
    expect(prompt).toContain("[User]: please fix");
    expect(prompt).toContain('[Assistant tool calls]: read(path="a")');
    expect(prompt).toContain("[... 3000 more characters truncated]");
    expect(prompt).toContain("<previous-summary>\nbefore");
  });

  it("calls an OpenAI-compatible endpoint and reads text and usage", async () => {
    const seen: Array<{ url: string; body: any; auth: string | null }> = [];
    const fakeFetch = (async (url: string, init: RequestInit) => {
      seen.push({
        url,
        body: JSON.parse(String(init.body)),
        auth: new Headers(init.headers).get("Authorization"),
      });
      return Response.json({
        choices: [{ message: { content: " the summary " } }],
        usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
      });
    }) as typeof fetch;
    const summarizer = new OpenAISummarizer({
      baseUrl: "https://llm.test/v1/",
      apiKey: "k",
      model: "m",
      fetch: fakeFetch,
    });
    const result = await summarizer.summarize({
      kind: "branch",
      messages: [user("x")],
      readFiles: [],
      modifiedFiles: [],
    });
    expect(result).toEqual({ text: "the summary", usage: { input: 10, output: 3, totalTokens: 13 } });
    expect(seen[0]?.url).toBe("https://llm.test/v1/chat/completions");
    expect(seen[0]?.auth).toBe("Bearer k");
    expect(seen[0]?.body.model).toBe("m");
    expect(seen[0]?.body.messages.map((m: { role: string }) => m.role)).toEqual(["system", "user"]);
    const failing = new OpenAISummarizer({
      baseUrl: "https://x",
      model: "m",
      fetch: (async () => new Response("no", { status: 503 })) as typeof fetch,
    });
    await expect(
      failing.summarize({ kind: "branch", messages: [], readFiles: [], modifiedFiles: [] }),
    ).rejects.toThrow("503");
    // What the endpoint or the network said is not repeated.
    const answering = (respond: () => Promise<Response>) =>
      new OpenAISummarizer({ baseUrl: "https://x", model: "m", fetch: respond as typeof fetch }).summarize({
        kind: "branch",
        messages: [],
        readFiles: [],
        modifiedFiles: [],
      });
    const page = answering(
      async () => new Response("<html>secret-host internal page</html>", { status: 200 }),
    );
    await expect(page).rejects.toThrow(/^summarizer endpoint answered something other than JSON$/);
    const unreachable = answering(async () => {
      throw new TypeError("connect ECONNREFUSED 10.1.2.3:443");
    });
    await expect(unreachable).rejects.toThrow(/^summarizer endpoint could not be reached$/);
    const slow = new OpenAISummarizer({
      baseUrl: "https://x",
      model: "m",
      timeoutMs: 10,
      fetch: ((_url: string, init: RequestInit) =>
        new Promise((_resolve, reject) =>
          init.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
        )) as typeof fetch,
    });
    await expect(
      slow.summarize({ kind: "branch", messages: [], readFiles: [], modifiedFiles: [] }),
    ).rejects.toThrow(/^summarizer endpoint did not answer within 10 ms$/);
  });

  it("calls Workers AI through its binding, and tells its failures in its own words", async () => {
    const request = { kind: "branch" as const, messages: [user("x")], readFiles: [], modifiedFiles: [] };
    const seen: Array<{ model: string; roles: string[] }> = [];
    const answering = new WorkersAISummarizer(
      {
        async run(model, input) {
          seen.push({ model, roles: input.messages.map((m) => m.role) });
          return { response: " the summary ", usage: { prompt_tokens: 10, completion_tokens: 3 } };
        },
      },
      "@cf/test/model",
    );
    expect(await answering.summarize(request)).toEqual({
      text: "the summary",
      usage: { input: 10, output: 3 },
    });
    expect(seen).toEqual([{ model: "@cf/test/model", roles: ["system", "user"] }]);
    // What the binding threw (an upstream's text, an address, a stack) is not repeated.
    const failing = (error: unknown) =>
      new WorkersAISummarizer({
        run: async () => Promise.reject(error),
      }).summarize(request);
    const upstream = Object.assign(new Error("3040: upstream 10.1.2.3 said: capacity exceeded"), {
      name: "InferenceUpstreamError",
    });
    await expect(failing(upstream)).rejects.toThrow(
      /^Workers AI failed to summarize \(InferenceUpstreamError\)$/,
    );
    const limited = Object.assign(new Error("rate limited for account 0123abcd"), { status: 429 });
    await expect(failing(limited)).rejects.toThrow(/^Workers AI answered 429$/);
    await expect(failing(new Error("internal host ai-42.internal refused"))).rejects.toThrow(
      /^Workers AI failed to summarize$/,
    );
    await expect(failing("a bare string from the binding")).rejects.toThrow(
      /^Workers AI failed to summarize$/,
    );
    const noText = new WorkersAISummarizer({ run: async () => ({ response: "  " }) }).summarize(request);
    await expect(noText).rejects.toThrow(/^Workers AI returned no text$/);
  });

  it("writes nothing and answers summarizer_failed in Workers AI's words when its binding fails", async () => {
    const session = await fresh();
    for (let i = 0; i < 6; i++) await session.appendMessage(user(words(200)));
    const summarizer = new WorkersAISummarizer({
      run: async () => Promise.reject(new Error("upstream 10.1.2.3: secret-host page")),
    });
    const error = await expectCode(
      session.compact({ keepRecentTokens: 100, summarizer }),
      "summarizer_failed",
    );
    expect(error.message).toBe("the summarizer failed: Workers AI failed to summarize");
    expect(error.details).toEqual({ summarizer: "workers-ai" });
    expect((await session.getInfo()).entryCount).toBe(6);
  });

  it("extracts goal, requests in order, files and last state deterministically", async () => {
    const request = {
      kind: "compaction" as const,
      messages: [user("build a parser"), assistant("started"), user("add tests"), assistant("tests added")],
      readFiles: ["a.ts"],
      modifiedFiles: ["b.ts"],
    };
    const one = await extractive.summarize(request);
    expect(one).toEqual(await extractive.summarize(request));
    expect(one.text).toContain("## Goal\nbuild a parser");
    expect(one.text).toContain("1. build a parser\n2. add tests");
    expect(one.text).toContain("Read: a.ts\nModified: b.ts");
    expect(one.text).toContain("## Last state\ntests added");
    const next = await extractive.summarize({
      ...request,
      messages: [user("now docs")],
      previousSummary: one.text,
    });
    expect(next.text).toContain("## Goal\nbuild a parser");
    expect(next.text).toContain("## Earlier requests\n1. build a parser\n2. add tests");
    expect(next.text).toContain("## User requests\n1. now docs");
  });

  it("keeps the newest requests of chained compactions, not the first summary's text", async () => {
    let previousSummary: string | undefined;
    for (let round = 1; round <= 4; round++) {
      const messages = Array.from({ length: 25 }, (_, i) => user(`round ${round} request ${i + 1}`));
      previousSummary = (
        await extractive.summarize({
          kind: "compaction",
          messages,
          readFiles: [],
          modifiedFiles: [],
          previousSummary,
        })
      ).text;
    }
    const last = previousSummary as string;
    for (const round of [2, 3]) expect(last).toContain(`round ${round} request 25`);
    expect(last).toContain("## User requests\n1. round 4 request 1");
    expect(last).toContain("(15 earlier requests not shown)\n16. round 1 request 16\n");
    expect(last).not.toContain("round 1 request 15\n");
    // A summary another summarizer wrote is kept as its text.
    const foreign = await extractive.summarize({
      kind: "compaction",
      messages: [user("go on")],
      readFiles: [],
      modifiedFiles: [],
      previousSummary: "The user built a parser.\nIt works.",
    });
    expect(foreign.text).toContain("## Earlier\nIt works.");
  });
});

describe("compaction property", () => {
  type Step =
    | { kind: "user"; size: number }
    | { kind: "tools"; calls: number; size: number; image: boolean; steer: boolean }
    | { kind: "branch"; back: number }
    | { kind: "compact"; keep: number; retainTail: boolean }
    | { kind: "setting" };

  const step: fc.Arbitrary<Step> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({ kind: fc.constant("user" as const), size: fc.integer({ min: 1, max: 400 }) }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant("tools" as const),
        calls: fc.integer({ min: 1, max: 3 }),
        size: fc.integer({ min: 1, max: 800 }),
        image: fc.boolean(),
        steer: fc.boolean(),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant("branch" as const), back: fc.integer({ min: 1, max: 6 }) }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("compact" as const),
        keep: fc.integer({ min: 0, max: 1500 }),
        retainTail: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("setting" as const) }) },
  );

  function checkContext(messages: readonly AgentMessage[]) {
    const calls = new Set<string>();
    for (const message of messages) {
      if (message.role === "assistant") {
        for (const part of (message as { content: Array<{ type: string; id?: string }> }).content) {
          if (part.type === "toolCall" && part.id) calls.add(part.id);
        }
      }
      if (message.role === "toolResult") {
        expect(
          calls.has((message as { toolCallId: string }).toolCallId),
          "a tool result kept without its call",
        ).toBe(true);
      }
    }
  }

  it("never keeps a tool result without its call, nor loses an entry after the cut", async () => {
    let counter = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 60 }), async (steps) => {
        const session = await fresh();
        for (const s of steps) {
          if (s.kind === "user") await session.appendMessage(user(words(s.size)));
          else if (s.kind === "setting") await session.appendThinkingLevelChange("low");
          else if (s.kind === "tools") {
            const ids = Array.from({ length: s.calls }, () => `call-${counter++}`);
            await session.appendMessage(
              assistant("working", {
                toolCalls: ids.map((id) => ({ id, name: "read", arguments: { path: `${id}.ts` } })),
              }),
            );
            for (const [i, id] of ids.entries()) {
              // A user steering the agent between results: a turn start inside a tool call's span.
              if (s.steer && i > 0) await session.appendMessage(user(`steer ${words(s.size)}`));
              const result = toolResult(id, "read", words(s.size));
              if (s.image) result.content.push({ type: "image", data: "AAAA", mimeType: "image/png" });
              await session.appendMessage(result);
            }
          } else if (s.kind === "branch") {
            const path = await session.getBranch();
            const target = path[Math.max(0, path.length - 1 - s.back)];
            if (target && !(target.type === "message" && target.message.role === "toolResult"))
              await session.setLeafId(target.id);
          } else {
            const path = await session.getBranch();
            let prep: ReturnType<typeof prepareCompaction> | undefined;
            try {
              prep = prepareCompaction(path, { keepRecentTokens: s.keep, retainTail: s.retainTail });
            } catch (error) {
              expect((error as SessionError).code).toBe("nothing_to_compact");
              continue;
            }
            const entry = await session.compact({
              keepRecentTokens: s.keep,
              retainTail: s.retainTail,
              summary: "S",
            });
            const context = await session.buildContext();
            checkContext(context.messages);
            // Every message from the first kept entry to the old leaf is still in the context, in order.
            const firstKept = path.findIndex((e) => e.id === entry.firstKeptEntryId);
            const kept = path
              .slice(firstKept)
              .filter((e) => e.type === "message")
              .map((e) => (e as { message: AgentMessage }).message);
            expect(context.messages[0]).toMatchObject({ role: "compactionSummary", summary: "S" });
            expect(context.messages.slice(1)).toEqual(kept);
            expect(prep.firstKeptEntryId).toBe(entry.firstKeptEntryId);
          }
          checkContext((await session.buildContext()).messages);
        }
      }),
      { seed: 20261130, numRuns: 150 },
    );
  });
});
