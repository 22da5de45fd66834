import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  RemoveMessage,
  ToolMessage,
} from "@langchain/core/messages";
import {
  Annotation,
  type BaseCheckpointSaver,
  Command,
  END,
  interrupt,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
  type StateSnapshot,
} from "@langchain/langgraph";
import { type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint";
import { validateUIMessages } from "ai";
import { beforeAll, describe, expect, it } from "vitest";
import { RemoteSession } from "../../src/client";
import { conversation } from "../../src/core/agent-export";
import { prepareCompaction } from "../../src/core/compaction";
import { MemoryRepo } from "../../src/core/memory";
import { type AssistantMessage, NO_USAGE } from "../../src/core/messages";
import { NO_RESULT_TEXT } from "../../src/core/providers/normalize";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";
import { type TreeNode, walkTree } from "../../src/core/tree";
import { CfSessionsChatStore } from "../../src/frameworks/ai-sdk";
import { CfSessionsSaver } from "../../src/frameworks/langgraph";
import { CfSessionsSession } from "../../src/frameworks/openai-agents";
import { adapterRepos } from "../support/adapter-repos";
import { earlierSession } from "./earlier-sessions";

/*
 * A real graph on the saver: it stops at an interrupt, resumes, and is forked from an earlier
 * checkpoint (LangGraph's time travel). The same script runs on LangGraph's own MemorySaver, and
 * every state it reads must be the same; the fork shows as a branch of the thread's session.
 */

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

function graphOn(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode("draft", () => ({ steps: ["draft"], messages: [new AIMessage("a first draft")] }))
    .addNode("review", () => {
      const verdict = interrupt<string, string>("publish the draft?");
      return { steps: [`review:${verdict}`], messages: [new HumanMessage(`verdict: ${verdict}`)] };
    })
    .addNode("publish", () => ({ steps: ["publish"] }))
    .addEdge(START, "draft")
    .addEdge("draft", "review")
    .addEdge("review", "publish")
    .addEdge("publish", END)
    .compile({ checkpointer });
}

/** What a state snapshot says, without the ids and times that differ between savers. */
function seen(state: StateSnapshot) {
  const values = state.values as typeof State.State;
  return {
    steps: values.steps,
    messages: values.messages.map((m) => [m.getType(), m.content]),
    next: state.next,
    interrupts: state.tasks.flatMap((task) => task.interrupts.map((i) => i.value)),
    source: state.metadata?.source,
    step: state.metadata?.step,
  };
}

interface Run {
  seen: unknown[];
  /** The checkpoint ids the script went through: before the review, the first answer, the fork. */
  beforeReview: string;
  forked: string;
}

/** The script: run to the interrupt, resume, then fork from before the review and answer again. */
async function script(checkpointer: BaseCheckpointSaver, threadId: string): Promise<Run> {
  const graph = graphOn(checkpointer);
  const config = { configurable: { thread_id: threadId } };
  const out: unknown[] = [];
  await graph.invoke({ messages: [new HumanMessage("write a post")], steps: ["start"] }, config);
  out.push(seen(await graph.getState(config)));
  await graph.invoke(new Command({ resume: "yes" }), config);
  out.push(seen(await graph.getState(config)));

  const history: StateSnapshot[] = [];
  for await (const state of graph.getStateHistory(config)) history.push(state);
  out.push(history.map(seen));
  const beforeReview = history.find((s) => s.next.includes("review"));
  if (!beforeReview) throw new Error("no checkpoint before the review");

  // Time travel: change the state as it stood before the review, and run on from there.
  const forkConfig = await graph.updateState(beforeReview.config, { steps: ["edited"] });
  await graph.invoke(null, forkConfig);
  out.push(seen(await graph.getState(config)));
  await graph.invoke(new Command({ resume: "no" }), config);
  const final = await graph.getState(config);
  out.push(seen(final));
  out.push(seen(await graph.getState(beforeReview.config)));
  return {
    seen: out,
    beforeReview: beforeReview.config.configurable?.checkpoint_id as string,
    forked: forkConfig.configurable?.checkpoint_id as string,
  };
}

let reference: Run;
beforeAll(async () => {
  reference = await script(new MemorySaver(), "reference");
});

const repos = adapterRepos();

describe.each(repos)("a StateGraph checkpointed in %s", (_name, makeRepo) => {
  let repo: SessionRepo;
  let saver: CfSessionsSaver;
  let run: Run;
  const threadId = `graph thread/${crypto.randomUUID()}`;

  beforeAll(async () => {
    repo = await makeRepo();
    saver = new CfSessionsSaver({ repo });
    run = await script(saver, threadId);
  });

  it("stops at the interrupt, resumes, and forks with the same states as LangGraph's MemorySaver", () => {
    expect(run.seen).toEqual(reference.seen);
    const [interrupted, resumed] = run.seen as Array<ReturnType<typeof seen>>;
    expect(interrupted?.interrupts).toEqual(["publish the draft?"]);
    expect(resumed?.steps).toEqual(["start", "draft", "review:yes", "publish"]);
    const final = run.seen[4] as ReturnType<typeof seen>;
    expect(final.steps).toEqual(["start", "draft", "edited", "review:no", "publish"]);
  });

  it("keeps the thread as one session whose tree branches where the fork was made", async () => {
    const sessionId = await saver.sessionIdFor(threadId);
    expect(sessionId).toBe(`langgraph:graph_20thread_2f${threadId.slice("graph thread/".length)}`);
    const session = await repo.open(sessionId);
    expect((await session.getInfo()).metadata).toEqual({ langgraph: { threadId, checkpointNs: "" } });
    const nodes = [...walkTree(await session.getTree())];
    const byId = new Map(nodes.map((node) => [node.id, node]));
    // The checkpoints made from a checkpoint: its custom children, or those below the entries of
    // the messages they added.
    const nextCheckpoints = (node: TreeNode | undefined): string[] =>
      (node?.children ?? []).flatMap((child) =>
        child.type === "custom" ? [child.id] : nextCheckpoints(byId.get(child.id)),
      );
    // The checkpoint before the review has two checkpoints after it: the first run's and the fork.
    const children = nextCheckpoints(byId.get(run.beforeReview));
    expect(children).toContain(run.forked);
    const branches = await Promise.all(
      children.map(async (id) => ((await session.getEntry(id)) as { customType?: string }).customType),
    );
    expect(branches.filter((type) => type === "langgraph:checkpoint").length).toBe(2);
    // The head is where the graph stopped last: the fork's branch, not the first answer's.
    const branch = await session.getBranch();
    expect(branch.map((entry) => entry.id)).toContain(run.forked);
  });

  it("keeps the messages as the session's conversation: the context at every checkpoint is its messages", async () => {
    const session = await repo.open(await saver.sessionIdFor(threadId));
    const graph = graphOn(saver);
    const config = { configurable: { thread_id: threadId } };
    const roles: Record<string, string> = { human: "user", ai: "assistant" };
    let checked = 0;
    for await (const state of graph.getStateHistory(config)) {
      const checkpointId = state.config.configurable?.checkpoint_id as string;
      const context = await session.buildContext({ leafId: checkpointId });
      const messages = (state.values as typeof State.State).messages ?? [];
      expect(context.messages.map((m) => [m.role, contentText((m as { content: unknown }).content)])).toEqual(
        messages.map((m) => [roles[m.getType()], m.content]),
      );
      checked++;
    }
    expect(checked).toBeGreaterThan(5);
    // Each message is stored once, as an entry, whichever checkpoints hold it.
    const entries = await session.getEntries({ type: "message", limit: 1000 });
    expect(entries.map((entry) => (entry as { message: { role: string } }).message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "user",
    ]);
  });

  it("answers getTuple for a thread it never saw with undefined, and lists nothing for it", async () => {
    const config = { configurable: { thread_id: `never-${crypto.randomUUID()}` } };
    expect(await saver.getTuple(config)).toBeUndefined();
    const listed = [];
    for await (const tuple of saver.list(config)) listed.push(tuple);
    expect(listed).toEqual([]);
  });

  it("refuses a put without a thread, or with a malformed checkpoint, and writes nothing", async () => {
    const before = (await repo.list()).sessions.length;
    const checkpoint = {
      v: 4,
      id: "cp-1",
      ts: new Date().toISOString(),
      channel_values: {},
      channel_versions: {},
      versions_seen: {},
    };
    const metadata = { source: "input" as const, step: -1, parents: {} };
    await expect(saver.put({ configurable: {} }, checkpoint, metadata, {})).rejects.toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("thread_id"),
    });
    await expect(saver.put({}, checkpoint, metadata, {})).rejects.toMatchObject({ code: "invalid_request" });
    const broken = { ...checkpoint, channel_versions: "none" } as unknown as typeof checkpoint;
    await expect(
      saver.put({ configurable: { thread_id: "malformed" } }, broken, metadata, {}),
    ).rejects.toMatchObject({ code: "invalid_request" });
    await expect(
      saver.putWrites({ configurable: { thread_id: "malformed" } }, [["a", 1]], "task"),
    ).rejects.toMatchObject({ code: "invalid_request", message: expect.stringContaining("checkpoint_id") });
    await expect(saver.getTuple({ configurable: { thread_id: 42 } } as never)).rejects.toMatchObject({
      code: "invalid_request",
    });
    expect((await repo.list()).sessions.length).toBe(before);
  });

  it("deletes a thread's sessions in every namespace", async () => {
    const id = `doomed-${crypto.randomUUID()}`;
    const checkpoint = {
      v: 4,
      id: "cp-1",
      ts: new Date().toISOString(),
      channel_values: {},
      channel_versions: {},
      versions_seen: {},
    };
    const metadata = { source: "input" as const, step: -1, parents: {} };
    await saver.put({ configurable: { thread_id: id } }, checkpoint, metadata, {});
    await saver.put(
      { configurable: { thread_id: id, checkpoint_ns: "sub:graph|1" } },
      checkpoint,
      metadata,
      {},
    );
    expect(
      await saver.getTuple({ configurable: { thread_id: id, checkpoint_ns: "sub:graph|1" } }),
    ).toBeDefined();
    await saver.deleteThread(id);
    expect(await saver.getTuple({ configurable: { thread_id: id } })).toBeUndefined();
    expect(
      await saver.getTuple({ configurable: { thread_id: id, checkpoint_ns: "sub:graph|1" } }),
    ).toBeUndefined();
  });
});

/** A graph of one model node, which answers with `reply` to the messages it is given. */
function modelGraph(checkpointer: BaseCheckpointSaver, reply: (messages: BaseMessage[]) => string) {
  return new StateGraph(MessagesAnnotation)
    .addNode("model", ({ messages }) => ({ messages: [new AIMessage(reply(messages))] }))
    .addEdge(START, "model")
    .addEdge("model", END)
    .compile({ checkpointer });
}

/**
 * A graph that edits its messages: a tool call and its result, then a message replaced by its id
 * and another removed (`RemoveMessage`), as LangChain's trimming and summarizing nodes do.
 */
function editingGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("call", () => ({
      messages: [
        new AIMessage({
          id: "call-1",
          content: "",
          tool_calls: [{ id: "t1", name: "weather", args: { city: "Paris" } }],
        }),
        new ToolMessage({ id: "result-1", tool_call_id: "t1", name: "weather", content: "sunny, 21 °C" }),
        new AIMessage({ id: "answer-1", content: "It is sunny in Paris." }),
      ],
    }))
    .addNode("edit", () => ({
      messages: [
        new AIMessage({ id: "answer-1", content: "Sunny, 21 °C." }),
        new RemoveMessage({ id: "question-1" }),
      ],
    }))
    .addEdge(START, "call")
    .addEdge("call", "edit")
    .addEdge("edit", END)
    .compile({ checkpointer });
}

async function editingScript(checkpointer: BaseCheckpointSaver, threadId: string) {
  const graph = editingGraph(checkpointer);
  const config = { configurable: { thread_id: threadId } };
  await graph.invoke(
    { messages: [new HumanMessage({ id: "question-1", content: "weather in Paris?" })] },
    config,
  );
  const states: StateSnapshot[] = [];
  for await (const state of graph.getStateHistory(config)) states.push(state);
  return states;
}

const contentText = (content: unknown): string =>
  typeof content === "string"
    ? content
    : (content as Array<{ type: string; text?: string }>).map((b) => b.text ?? "").join("");

describe.each(repos)("a graph that edits its messages, checkpointed in %s", (_name, makeRepo) => {
  it("keeps every checkpoint's messages, and the context at each of them is those messages", async () => {
    const reference = await editingScript(new MemorySaver(), "editing-reference");
    const repo = await makeRepo();
    const saver = new CfSessionsSaver({ repo });
    const threadId = `editing-${crypto.randomUUID()}`;
    const states = await editingScript(saver, threadId);
    const messagesOf = (state: StateSnapshot) =>
      (
        state.values as { messages?: Array<{ id?: string; getType(): string; content: unknown }> }
      ).messages?.map((m) => [m.id, m.getType(), m.content]) ?? [];
    expect(states.map(messagesOf)).toEqual(reference.map(messagesOf));
    const last = messagesOf(states[0] as StateSnapshot);
    expect(last.map(([id]) => id)).toEqual(["call-1", "result-1", "answer-1"]);
    expect(last.at(-1)?.[2]).toBe("Sunny, 21 °C.");

    const session = await repo.open(await saver.sessionIdFor(threadId));
    for (const state of states) {
      const context = await session.buildContext({
        leafId: state.config.configurable?.checkpoint_id as string,
      });
      const roles: Record<string, string> = { human: "user", ai: "assistant", tool: "toolResult" };
      expect(context.messages.map((m) => [m.role, contentText(m.content)])).toEqual(
        messagesOf(state).map(([, type, content]) => [roles[type as string], contentText(content)]),
      );
    }
    // The edits are the session's own: one replacing the answer, one leaving the question out.
    const edits = await session.getEntries({ type: "context_edit" });
    expect(edits.map((edit) => (edit as { replacement: unknown }).replacement === null)).toEqual([
      true,
      false,
    ]);
    // The tool call and its result read as such in a model API's shape.
    const chat = (await session.contextIn("openai-chat", {
      model: { provider: "openai", modelId: "gpt-4o" },
    })) as {
      messages: Array<{ role: string; tool_calls?: unknown[]; tool_call_id?: string }>;
    };
    expect(chat.messages.map((m) => m.role)).toEqual(["assistant", "tool", "assistant"]);
    expect(chat.messages[0]?.tool_calls).toHaveLength(1);
    expect(chat.messages[1]?.tool_call_id).toBe("t1");
  });
});

describe.each(repos)(
  "a graph that starts its thread on a session written another way, in %s",
  (_name, makeRepo) => {
    it("reads the session's conversation as its messages and goes on writing it", async () => {
      const repo = await makeRepo();
      const session = await repo.create({ id: `from-session-${crypto.randomUUID()}` });
      await session.appendMessage({ role: "user", content: "weather in Paris?", timestamp: 1 });
      await session.appendMessage({
        role: "assistant",
        content: [{ type: "toolCall", id: "t1", name: "weather", arguments: { city: "Paris" } }],
        api: "openai-completions",
        provider: "openai",
        model: "gpt-4o",
        usage: NO_USAGE,
        stopReason: "toolUse",
        timestamp: 2,
      });
      await session.appendMessage({
        role: "toolResult",
        toolCallId: "t1",
        toolName: "weather",
        content: [{ type: "text", text: "sunny" }],
        isError: false,
        timestamp: 3,
      });
      const before = (await session.getEntries({ type: "message" })).length;

      const saver = new CfSessionsSaver({ repo, sessionPrefix: "" });
      const graph = modelGraph(
        saver,
        (messages) => `after ${messages.length} messages: ${String(messages.at(-1)?.content)}`,
      );
      const config = { configurable: { thread_id: session.id } };
      const start = await graph.getState(config);
      expect(
        (start.values as { messages: Array<{ getType(): string }> }).messages.map((m) => m.getType()),
      ).toEqual(["human", "ai", "tool"]);
      await graph.invoke({ messages: [new HumanMessage("and tomorrow?")] }, config);
      const state = await graph.getState(config);
      const messages = (state.values as { messages: Array<{ getType(): string; content: unknown }> })
        .messages;
      expect(messages.map((m) => [m.getType(), contentText(m.content)])).toEqual([
        ["human", "weather in Paris?"],
        ["ai", ""],
        ["tool", "sunny"],
        ["human", "and tomorrow?"],
        ["ai", "after 4 messages: and tomorrow?"],
      ]);
      // The session goes on from where it stood: its own messages once, the graph's after them.
      const context = await session.buildContext();
      expect(context.messages.map((m) => [m.role, contentText((m as { content: unknown }).content)])).toEqual(
        [
          ["user", "weather in Paris?"],
          ["assistant", ""],
          ["toolResult", "sunny"],
          ["user", "and tomorrow?"],
          ["assistant", "after 4 messages: and tomorrow?"],
        ],
      );
      expect((await session.getEntries({ type: "message" })).length).toBe(before + 2);
      expect(await session.getEntries({ type: "context_edit" })).toEqual([]);
      // Another turn reads its messages back from the checkpoints.
      await graph.invoke({ messages: [new HumanMessage("thanks")] }, config);
      const again = (await graph.getState(config)).values as { messages: unknown[] };
      expect(again.messages).toHaveLength(7);
    });

    it("reads what another door appended after its last checkpoint, and goes on under it", async () => {
      const repo = await makeRepo();
      const saver = new CfSessionsSaver({ repo });
      const graph = new StateGraph(State)
        .addNode("model", ({ messages }) => ({
          steps: ["model"],
          messages: [new AIMessage(`after ${messages.length}: ${String(messages.at(-1)?.content)}`)],
        }))
        .addEdge(START, "model")
        .addEdge("model", END)
        .compile({ checkpointer: saver });
      const threadId = `appended-${crypto.randomUUID()}`;
      const config = { configurable: { thread_id: threadId } };
      await graph.invoke({ messages: [new HumanMessage("hello")], steps: ["start"] }, config);
      const session = await repo.open(await saver.sessionIdFor(threadId));
      await session.appendMessage({ role: "user", content: "from another door", timestamp: Date.now() });

      const texts = (state: StateSnapshot) =>
        (state.values as typeof State.State).messages.map((m) => [m.getType(), contentText(m.content)]);
      const state = await graph.getState(config);
      expect(texts(state)).toEqual([
        ["human", "hello"],
        ["ai", "after 1: hello"],
        ["human", "from another door"],
      ]);
      expect((state.values as typeof State.State).steps).toEqual(["start", "model"]);

      // A checkpoint put from that state without its first message: its change is from the
      // messages at the head, as another process reads it.
      const head = (await saver.getTuple(config)) as CheckpointTuple;
      const kept = (head.checkpoint.channel_values.messages as BaseMessage[]).slice(1);
      const version = Number(head.checkpoint.channel_versions.messages) + 1;
      const updated = await saver.put(
        head.config,
        {
          ...head.checkpoint,
          id: uuid6(-3),
          channel_values: { ...head.checkpoint.channel_values, messages: kept },
          channel_versions: { ...head.checkpoint.channel_versions, messages: version },
        },
        { source: "update", step: Number(head.metadata?.step) + 1, parents: {} },
        { messages: version },
      );
      const reread = (await new CfSessionsSaver({ repo }).getTuple(updated)) as CheckpointTuple;
      expect((reread.checkpoint.channel_values.messages as BaseMessage[]).map((m) => m.id)).toEqual(
        kept.map((m) => m.id),
      );
      await graph.invoke({ messages: [new HumanMessage("and you?")], steps: ["again"] }, config);
      const after = await graph.getState(config);
      const expected = [
        ["ai", "after 1: hello"],
        ["human", "from another door"],
        ["human", "and you?"],
        ["ai", "after 3: and you?"],
      ];
      expect(texts(after)).toEqual(expected);
      expect((after.values as typeof State.State).steps).toEqual(["start", "model", "again", "model"]);
      const roles = { human: "user", ai: "assistant" } as Record<string, string>;
      const context = await session.buildContext();
      expect(context.messages.map((m) => [m.role, contentText((m as { content: unknown }).content)])).toEqual(
        expected.map(([type, text]) => [roles[type as string], text]),
      );
      // The next turn reads the thread back from its checkpoints.
      await graph.invoke({ messages: [new HumanMessage("bye")] }, config);
      expect(texts(await graph.getState(config))).toEqual([
        ...expected,
        ["human", "bye"],
        ["ai", "after 5: bye"],
      ]);
    });

    it("goes on under a model change, a thinking level and a compaction another door appended after its last checkpoint", async () => {
      const repo = await makeRepo();
      const saver = new CfSessionsSaver({ repo });
      const graph = modelGraph(
        saver,
        (messages) => `after ${messages.length}: ${String(messages.at(-1)?.content)}`,
      );
      const threadId = `settings-${crypto.randomUUID()}`;
      const config = { configurable: { thread_id: threadId } };
      await graph.invoke({ messages: [new HumanMessage("hello")] }, config);
      const session = await repo.open(await saver.sessionIdFor(threadId));
      await session.appendModelChange("anthropic", "claude-sonnet-4-5");
      await session.appendThinkingLevelChange("high");
      await session.compact({ summary: "They said hello.", keepRecentTokens: 0 });

      await graph.invoke({ messages: [new HumanMessage("and now?")] }, config);
      const texts = (state: StateSnapshot) =>
        (state.values as { messages: BaseMessage[] }).messages.map((m) => [
          m.getType(),
          contentText(m.content),
        ]);
      // The graph's state is its whole conversation; what a model is sent is the compacted one,
      // with the model and thinking level the other door set.
      const expected = [
        ["human", "hello"],
        ["ai", "after 1: hello"],
        ["human", "and now?"],
        ["ai", "after 3: and now?"],
      ];
      expect(texts(await graph.getState(config))).toEqual(expected);
      const context = await session.buildContext();
      expect(context.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
      expect(context.thinkingLevel).toBe("high");
      expect(
        context.messages.map((m) => [m.role, contentText((m as { content?: unknown }).content ?? "")]),
      ).toEqual([
        ["compactionSummary", ""],
        // The compaction keeps the last answer.
        ["assistant", "after 1: hello"],
        ["user", "and now?"],
        ["assistant", "after 3: and now?"],
      ]);
      expect((await session.getBranch()).map((entry) => entry.type)).toContain("compaction");

      // A message another door appends after the compaction is read on the whole conversation.
      await session.appendMessage({ role: "user", content: "from another door", timestamp: Date.now() });
      expect(texts(await graph.getState(config))).toEqual([...expected, ["human", "from another door"]]);
      await graph.invoke({ messages: [new HumanMessage("bye")] }, config);
      expect(texts(await graph.getState(config))).toEqual([
        ...expected,
        ["human", "from another door"],
        ["human", "bye"],
        ["ai", "after 6: bye"],
      ]);
      expect((await session.buildContext()).messages.map((m) => m.role)).toEqual([
        "compactionSummary",
        "assistant",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
      ]);
    });

    it("reads a compaction another door appended after its last checkpoint as nothing of its conversation", async () => {
      const repo = await makeRepo();
      const saver = new CfSessionsSaver({ repo });
      const graph = modelGraph(saver, (messages) => `after ${messages.length}`);
      const threadId = `compacted-${crypto.randomUUID()}`;
      const config = { configurable: { thread_id: threadId } };
      await graph.invoke({ messages: [new HumanMessage("hello")] }, config);
      const session = await repo.open(await saver.sessionIdFor(threadId));
      await session.compact({ summary: "They said hello.", keepRecentTokens: 0 });
      await session.appendMessage({ role: "user", content: "from another door", timestamp: Date.now() });
      const messages = ((await graph.getState(config)).values as { messages: BaseMessage[] }).messages;
      expect(messages.map((m) => [m.getType(), contentText(m.content)])).toEqual([
        ["human", "hello"],
        ["ai", "after 1"],
        ["human", "from another door"],
      ]);
    });

    it("reads a branch summary another door appended after its last checkpoint as a message, and leaves a context edit off its path", async () => {
      const repo = await makeRepo();
      const saver = new CfSessionsSaver({ repo });
      const graph = modelGraph(saver, (messages) => `after ${messages.length}`);
      const threadId = `summary-${crypto.randomUUID()}`;
      const config = { configurable: { thread_id: threadId } };
      await graph.invoke({ messages: [new HumanMessage("hello")] }, config);
      const session = await repo.open(await saver.sessionIdFor(threadId));
      const [hello] = await session.getEntries({ type: "message" });
      await session.appendBranchSummary({ summary: "They tried another way.", fromId: "root" });
      await graph.invoke({ messages: [new HumanMessage("next")] }, config);
      const types = async () =>
        ((await graph.getState(config)).values as { messages: BaseMessage[] }).messages.map((m) =>
          m.getType(),
        );
      // The graph's state and what a model is sent through every other door are one conversation.
      expect(await types()).toEqual(["human", "ai", "human", "human", "ai"]);
      const roles = async () => (await session.buildContext()).messages.map((m) => m.role);
      expect(await roles()).toEqual(["user", "assistant", "branchSummary", "user", "assistant"]);

      // An edit the graph's state would not honour is not on the path the graph goes on from.
      await session.appendContextEdit(hello?.id as string, null);
      await graph.invoke({ messages: [new HumanMessage("last")] }, config);
      expect(await types()).toEqual(["human", "ai", "human", "human", "ai", "human", "ai"]);
      expect(await roles()).toEqual([
        "user",
        "assistant",
        "branchSummary",
        "user",
        "assistant",
        "user",
        "assistant",
      ]);
    });

    it("reads what another door appended while the graph stops before a node, and goes on under it", async () => {
      const repo = await makeRepo();
      const saver = new CfSessionsSaver({ repo });
      const graph = new StateGraph(State)
        .addNode("draft", () => ({ steps: ["draft"], messages: [new AIMessage("a first draft")] }))
        .addNode("publish", ({ messages }) => ({
          steps: ["publish"],
          messages: [new AIMessage(`published after ${messages.length}`)],
        }))
        .addEdge(START, "draft")
        .addEdge("draft", "publish")
        .addEdge("publish", END)
        .compile({ checkpointer: saver, interruptBefore: ["publish"] });
      const threadId = `stopped-${crypto.randomUUID()}`;
      const config = { configurable: { thread_id: threadId } };
      await graph.invoke({ messages: [new HumanMessage("write a post")], steps: ["start"] }, config);
      const session = await repo.open(await saver.sessionIdFor(threadId));
      await session.appendMessage({ role: "user", content: "keep it short", timestamp: Date.now() });

      const texts = (state: StateSnapshot) =>
        (state.values as typeof State.State).messages.map((m) => [m.getType(), contentText(m.content)]);
      const waiting = await graph.getState(config);
      const appended = [
        ["human", "write a post"],
        ["ai", "a first draft"],
        ["human", "keep it short"],
      ];
      expect(texts(waiting)).toEqual(appended);
      expect(waiting.next).toEqual(["publish"]);
      // LangGraph names the waiting task in the namespace of the head's id: it is a UUID, read back
      // to the same state.
      const headId = waiting.config.configurable?.checkpoint_id as string;
      expect(headId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const atHead = { configurable: { thread_id: threadId, checkpoint_id: headId } };
      expect(texts(await graph.getState(atHead))).toEqual(appended);

      await graph.invoke(null, config);
      const done = await graph.getState(config);
      const expected = [...appended, ["ai", "published after 3"]];
      expect(texts(done)).toEqual(expected);
      expect((done.values as typeof State.State).steps).toEqual(["start", "draft", "publish"]);
      expect(done.next).toEqual([]);
      // The run went on from the head, under the appended message: one branch holds them all.
      expect(done.parentConfig?.configurable?.checkpoint_id).toBe(headId);
      const roles = { human: "user", ai: "assistant" } as Record<string, string>;
      const context = await session.buildContext();
      expect(context.messages.map((m) => [m.role, contentText((m as { content: unknown }).content)])).toEqual(
        expected.map(([type, text]) => [roles[type as string], text]),
      );

      // Writes under a head the thread has no entry for are refused, and nothing is written.
      const count = (await session.getEntries({ limit: 1000 })).length;
      const missing = {
        configurable: { thread_id: threadId, checkpoint_id: headId.replace(/.{12}$/, "00000000ffff") },
      };
      await expect(saver.putWrites(missing, [["steps", ["lost"]]], "task")).rejects.toMatchObject({
        code: "parent_not_found",
      });
      expect((await session.getEntries({ limit: 1000 })).length).toBe(count);
    });

    it("reads what another door appended while the graph waits at an interrupt, and resumes under it", async () => {
      const repo = await makeRepo();
      const saver = new CfSessionsSaver({ repo });
      const graph = graphOn(saver);
      const threadId = `interrupted-${crypto.randomUUID()}`;
      const config = { configurable: { thread_id: threadId } };
      await graph.invoke({ messages: [new HumanMessage("write a post")], steps: ["start"] }, config);
      const session = await repo.open(await saver.sessionIdFor(threadId));
      await session.appendMessage({ role: "user", content: "keep it short", timestamp: Date.now() });

      const texts = (state: StateSnapshot) =>
        (state.values as typeof State.State).messages.map((m) => [m.getType(), contentText(m.content)]);
      const waiting = await graph.getState(config);
      expect(texts(waiting)).toEqual([
        ["human", "write a post"],
        ["ai", "a first draft"],
        ["human", "keep it short"],
      ]);
      expect(waiting.next).toEqual(["review"]);
      // The head carries the interrupt's writes, so the graph still waits for its answer.
      const head = (await saver.getTuple(config)) as CheckpointTuple;
      expect(head.pendingWrites?.map(([, channel]) => channel)).toContain("__interrupt__");

      await graph.invoke(new Command({ resume: "yes" }), config);
      const resumed = await graph.getState(config);
      const expected = [
        ["human", "write a post"],
        ["ai", "a first draft"],
        ["human", "keep it short"],
        ["human", "verdict: yes"],
      ];
      expect(texts(resumed)).toEqual(expected);
      expect((resumed.values as typeof State.State).steps).toEqual([
        "start",
        "draft",
        "review:yes",
        "publish",
      ]);
      expect(resumed.next).toEqual([]);
      // The resumed run goes on under the appended message: one branch holds them all.
      const roles = { human: "user", ai: "assistant" } as Record<string, string>;
      const context = await session.buildContext();
      expect(context.messages.map((m) => [m.role, contentText((m as { content: unknown }).content)])).toEqual(
        expected.map(([type, text]) => [roles[type as string], text]),
      );
    });

    it.each([
      ["in the process that read it", false],
      ["in another process, from a checkpoint", true],
    ])(
      "answers a call another door wrote under the call's stored id, whatever id the graph was shown, %s",
      async (_, elsewhere) => {
        const repo = await makeRepo();
        const session = await repo.create({ id: `open-calls-${crypto.randomUUID()}` });
        await session.appendMessage({ role: "user", content: "read both files", timestamp: 1 });
        // Ids no model API takes as they are: Kimi's, and an OpenAI Responses call_id|item_id pair.
        const kimi = "functions.read:0";
        const responses = `call_${"a".repeat(30)}|fc_${"b".repeat(45)}`;
        await session.appendMessage({
          role: "assistant",
          content: [
            { type: "toolCall", id: kimi, name: "read", arguments: { path: "a.txt" } },
            { type: "toolCall", id: responses, name: "read", arguments: { path: "b.txt" } },
          ],
          api: "openai-completions",
          provider: "moonshot",
          model: "kimi-k2",
          usage: NO_USAGE,
          stopReason: "toolUse",
          timestamp: 2,
        });

        const shown: string[] = [];
        const graphOn = (saver: CfSessionsSaver) =>
          new StateGraph(MessagesAnnotation)
            .addNode("tools", ({ messages }) => {
              const calls = (messages.at(-1) as AIMessage).tool_calls ?? [];
              shown.push(...calls.map((call) => call.id as string));
              const answers = calls.map(
                (call) =>
                  new ToolMessage({
                    tool_call_id: call.id as string,
                    name: call.name,
                    content: `read ${call.args.path}`,
                  }),
              );
              return { messages: answers };
            })
            .addEdge(START, "tools")
            .addEdge("tools", END)
            .compile({ checkpointer: saver, interruptBefore: elsewhere ? ["tools"] : [] });
        const config = { configurable: { thread_id: session.id } };
        await graphOn(new CfSessionsSaver({ repo, sessionPrefix: "" })).invoke({ messages: [] }, config);
        // Another process goes on from the checkpoint the first one stopped at.
        if (elsewhere) await graphOn(new CfSessionsSaver({ repo, sessionPrefix: "" })).invoke(null, config);
        expect(shown).toEqual(["functions_read_0", `call_${"a".repeat(30)}`]);

        // Every door reads the results as the answers to the calls the session holds.
        const context = await session.buildContext();
        expect(context.messages.filter((m) => m.role === "toolResult")).toMatchObject([
          { toolCallId: kimi, content: [{ type: "text", text: "read a.txt" }] },
          { toolCallId: responses, content: [{ type: "text", text: "read b.txt" }] },
        ]);
        const chat = await session.contextIn("openai-chat", {
          model: { provider: "openai", modelId: "gpt-4o" },
        });
        expect(JSON.stringify(chat.messages)).not.toContain(NO_RESULT_TEXT);
        expect(
          chat.messages.filter((m) => m.role === "tool").map((m) => (m as { content: unknown }).content),
        ).toEqual(["read a.txt", "read b.txt"]);
      },
    );

    it("starts on a compacted session as a model is sent it, and reads its checkpoints back after another compaction", async () => {
      const repo = await makeRepo();
      const session = await repo.create({ id: `compacted-start-${crypto.randomUUID()}` });
      for (const text of ["one", "two", "three"]) {
        await session.appendMessage({ role: "user", content: text, timestamp: 1 });
      }
      await session.compact({ summary: "They counted.", keepRecentTokens: 0 });
      await session.appendMessage({ role: "user", content: "four", timestamp: 2 });
      const compile = (checkpointer: CfSessionsSaver) =>
        new StateGraph(MessagesAnnotation)
          .addNode("model", ({ messages }) => ({ messages: [new AIMessage(`after ${messages.length}`)] }))
          .addEdge(START, "model")
          .addEdge("model", END)
          .compile({ checkpointer });
      const config = { configurable: { thread_id: session.id } };
      await compile(new CfSessionsSaver({ repo, threadIdIsSessionId: true })).invoke(
        { messages: [new HumanMessage("go")] },
        config,
      );
      // The messages its latest checkpoint holds, as a saver that remembers nothing reads them.
      const texts = async () => {
        const tuple = await new CfSessionsSaver({ repo, threadIdIsSessionId: true }).getTuple(config);
        const messages = tuple?.checkpoint.channel_values.messages as BaseMessage[] | undefined;
        return (messages ?? []).map((m) => contentText(m.content));
      };
      const started = await texts();
      expect(started.slice(-3)).toEqual(["four", "go", `after ${started.length - 1}`]);
      expect(started[0]).toContain("They counted.");
      // Another door compacts again, and the graph goes on under that compaction: its checkpoints
      // still read back whole, by a saver that remembers nothing.
      await session.compact({ summary: "They counted on.", keepRecentTokens: 0 });
      await compile(new CfSessionsSaver({ repo, threadIdIsSessionId: true })).invoke(
        { messages: [new HumanMessage("more")] },
        config,
      );
      expect(await texts()).toEqual([...started, "more", `after ${started.length + 1}`]);
      expect((await session.buildContext()).messages.map((m) => m.role)).toEqual([
        "compactionSummary",
        "assistant",
        "user",
        "assistant",
      ]);
    });

    it("takes any session id as a thread id with threadIdIsSessionId, and refuses what is none", async () => {
      const repo = await makeRepo();
      const id = `chat:from.another-door_${crypto.randomUUID().slice(0, 8)}`;
      const session = await repo.create({ id });
      await session.appendMessage({ role: "user", content: "hello from elsewhere", timestamp: 1 });
      const saver = new CfSessionsSaver({ repo, threadIdIsSessionId: true });
      expect(await saver.sessionIdFor(id)).toBe(id);
      const graph = new StateGraph(MessagesAnnotation)
        .addNode("model", () => ({ messages: [new AIMessage("hello back")] }))
        .addEdge(START, "model")
        .addEdge("model", END)
        .compile({ checkpointer: saver });
      await graph.invoke({ messages: [new HumanMessage("anyone?")] }, { configurable: { thread_id: id } });
      const context = await session.buildContext();
      expect(context.messages.map((m) => contentText((m as { content: unknown }).content))).toEqual([
        "hello from elsewhere",
        "anyone?",
        "hello back",
      ]);
      // Its checkpoints are listed by its thread id, with or without the namespace.
      for (const configurable of [{ thread_id: id }, { thread_id: id, checkpoint_ns: "" }]) {
        const listed = [];
        for await (const tuple of saver.list({ configurable })) listed.push(tuple.checkpoint.id);
        expect(listed.length).toBeGreaterThan(1);
      }
      const before = (await repo.list()).sessions.length;
      await expect(saver.getTuple({ configurable: { thread_id: "not a session id" } })).rejects.toMatchObject(
        {
          code: "invalid_request",
          message: expect.stringContaining("thread_id"),
        },
      );
      expect((await repo.list()).sessions.length).toBe(before);
    });
  },
);

/** A LangChain human message as the serializer writes it. */
const human = (id: string, content: string) => ({
  lc: 1,
  type: "constructor",
  id: ["langchain_core", "messages", "HumanMessage"],
  kwargs: { id, content, additional_kwargs: {}, response_metadata: {} },
});

/** Appends a checkpoint as cf-sessions 0.1 wrote one: its messages channel held as a value. */
async function appendEarlierCheckpoint(session: Session, messages: unknown[]): Promise<void> {
  await session.appendCustomEntry("langgraph:checkpoint", {
    checkpoint: { v: 4, id: "late", ts: new Date().toISOString(), channel_versions: {}, versions_seen: {} },
    values: { messages: { type: "json", json: messages } },
    held: {},
    metadata: { type: "json", json: { source: "loop", step: 9, parents: {} } },
  });
}

interface EarlierThread {
  messages: Array<{ type: string; data: { id: string } }>;
  history: Array<{ id: string; messages: number }>;
}

describe.each(repos)(
  "a thread cf-sessions 0.1 wrote (checkpoints holding the messages) in %s",
  (_name, makeRepo) => {
    let repo: SessionRepo;
    beforeAll(async () => {
      repo = await makeRepo();
    });

    it("is its conversation through every door: the context at each checkpoint is that checkpoint's messages", async () => {
      const { session, expected } = await earlierSession<EarlierThread>(repo, "langgraph-0.1.0");
      const roles = { human: "user", ai: "assistant", tool: "toolResult" } as Record<string, string>;
      for (const { id, messages } of expected.history) {
        const context = await session.buildContext({ leafId: id });
        expect(context.messages.map((m) => m.role)).toEqual(
          expected.messages.slice(0, messages).map((m) => roles[m.type]),
        );
      }
      // The head (the last writes under the last checkpoint), in another API's shape.
      const chat = await session.contextIn("openai-chat", {
        model: { provider: "openai", modelId: "gpt-4o" },
      });
      expect(chat.messages.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
      ]);
      expect(chat.messages[1]).toMatchObject({ tool_calls: [{ function: { name: "get_weather" } }] });
      expect(chat.messages[2]).toMatchObject({ role: "tool", content: "sun in Paris" });
      expect(JSON.stringify(chat.messages[0])).toContain("image_url");
      expect(chat.messages.at(-1)).toMatchObject({ role: "assistant", content: "Rain." });
      // The other frameworks read it as their shapes.
      const items = await new CfSessionsSession({ repo, sessionId: session.id }).getItems();
      expect(items.map((item) => ("role" in item ? item.role : item.type))).toEqual([
        "user",
        "function_call",
        "function_call_result",
        "assistant",
        "user",
        "assistant",
      ]);
      const ui = await new CfSessionsChatStore({ repo, chatIdIsSessionId: true }).loadChat(session.id);
      await validateUIMessages({ messages: ui });
      expect(ui.map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(JSON.stringify(ui[1])).toContain("sun in Paris");
      // Found by a word of the tool's result, at the checkpoints that hold it (the service searches).
      if (session instanceof RemoteSession) {
        const found = await session.search("sun");
        expect(found.hits.map((hit) => hit.entryId)).toContain(expected.history[0]?.id);
      }
      // Another door appends after it: the conversation goes on from those messages.
      const head = await session.getLeafId();
      await session.appendMessage({ role: "user", content: "Thanks!", timestamp: Date.now() });
      const after = await session.buildContext();
      expect(after.messages.map((m) => contentText((m as { content: unknown }).content)).slice(-2)).toEqual([
        "Rain.",
        "Thanks!",
      ]);
      expect(after.messages).toHaveLength(7);
      // A checkpoint written as 0.1 wrote them, after it: the context is that checkpoint's messages.
      await appendEarlierCheckpoint(session, [human("h-a", "Only this"), human("h-b", "and this")]);
      const late = await session.buildContext();
      expect(late.messages.map((m) => contentText((m as { content: unknown }).content))).toEqual([
        "Only this",
        "and this",
      ]);
      // A branch from an earlier checkpoint is that checkpoint's messages and what follows it.
      const [second] = expected.history.filter((c) => c.messages === 2);
      await session.appendMessage(
        { role: "user", content: "Elsewhere?", timestamp: Date.now() },
        { parentId: second?.id },
      );
      expect((await session.buildContext()).messages.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "user",
      ]);
      expect((await session.buildContext({ leafId: head })).messages).toHaveLength(6);
    });

    it("compacts as its conversation: the summary's input is its messages, once each", async () => {
      const { session } = await earlierSession<EarlierThread>(repo, "langgraph-0.1.0");
      await session.appendMessage({ role: "user", content: "Thanks!", timestamp: Date.now() });
      const path = await session.getBranch();
      const { messagesToSummarize, turnPrefixMessages } = prepareCompaction(path, { keepRecentTokens: 0 });
      const input = [...messagesToSummarize, ...turnPrefixMessages];
      // The thread's messages as its last checkpoint holds them.
      const roles = ["user", "assistant", "toolResult", "assistant", "user", "assistant"];
      expect(input.map((m) => m.role)).toEqual(roles);
      expect(JSON.stringify(input)).toContain("sun in Paris");
      await session.compact({ summary: "They talked about the weather.", keepRecentTokens: 0 });
      const context = await session.buildContext();
      expect(context.messages.map((m) => m.role)).toEqual(["compactionSummary", "user"]);
      // An export writes what came before the compaction once: the last checkpoint's messages.
      const written = conversation(await session.getBranch());
      const earlier = written.filter((w) => w.entry.type === "custom").flatMap((w) => w.messages);
      expect(earlier.map((m) => m.role)).toEqual(roles);
      // A checkpoint holding its messages after the compaction stands for everything before it.
      await appendEarlierCheckpoint(session, []);
      expect((await session.buildContext()).messages).toEqual([]);
    });

    it("reads as it did, and its next checkpoint writes the whole conversation as the session's messages", async () => {
      // A thread id of letters, digits and dashes is its session's id when the saver has no prefix.
      const { session, expected } = await earlierSession<EarlierThread>(
        repo,
        "langgraph-0.1.0",
        `legacy-${crypto.randomUUID()}`,
      );
      const saver = new CfSessionsSaver({ repo, sessionPrefix: "" });
      const config = { configurable: { thread_id: session.id } };
      const graph = new StateGraph(MessagesAnnotation)
        .addNode("agent", () => ({ messages: [new AIMessage({ id: "ai-after", content: "Still sunny." })] }))
        .addNode("tools", () => ({}))
        .addEdge(START, "agent")
        .addConditionalEdges("agent", () => END, ["tools", END])
        .addEdge("tools", "agent")
        .compile({ checkpointer: saver });
      const ids = (state: StateSnapshot) =>
        (state.values as { messages: Array<{ id?: string }> }).messages.map((m) => m.id);
      // As cf-sessions 0.1 read it, and the context is those messages.
      expect(ids(await graph.getState(config))).toEqual(expected.messages.map((m) => m.data.id));
      expect((await session.buildContext()).messages).toHaveLength(expected.messages.length);

      await graph.invoke({ messages: [new HumanMessage({ id: "h-after", content: "And now?" })] }, config);
      const after = await graph.getState(config);
      expect(ids(after)).toEqual([...expected.messages.map((m) => m.data.id), "h-after", "ai-after"]);
      // From that checkpoint on, the conversation is the session's, each message once.
      const context = await session.buildContext();
      expect(context.messages.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
      ]);
      expect(contentText((context.messages.at(-1) as { content: unknown }).content)).toBe("Still sunny.");
      // The earlier checkpoints still read as they did.
      const history: StateSnapshot[] = [];
      for await (const state of graph.getStateHistory(config)) history.push(state);
      expect(history.length).toBeGreaterThan(3);
      for (const state of history) expect(ids(state).every((id) => typeof id === "string")).toBe(true);
    });
  },
);

describe("a graph whose messages the references cannot follow", () => {
  it("writes its list again, leaving the earlier out, so the context is still its messages", async () => {
    const repo = new MemoryRepo();
    const saver = new CfSessionsSaver({ repo, sessionPrefix: "" });
    const threadId = `reordered-${crypto.randomUUID()}`;
    const metadata = { source: "loop" as const, step: 0, parents: {} };
    const put = async (id: string, parent: string | undefined, messages: BaseMessage[], version: number) => {
      const checkpoint = {
        v: 4,
        id,
        ts: new Date().toISOString(),
        channel_values: { messages },
        channel_versions: { messages: version },
        versions_seen: {},
      };
      await saver.put(
        { configurable: { thread_id: threadId, checkpoint_id: parent } },
        checkpoint,
        metadata,
        {
          messages: version,
        },
      );
    };
    const a = new HumanMessage({ id: "a", content: "first" });
    const b = new AIMessage({ id: "b", content: "second" });
    await put("cp-1", undefined, [a, b], 1);
    // The same messages in another order, then one without an id.
    await put("cp-2", "cp-1", [b, a], 2);
    await put("cp-3", "cp-2", [b, a, new HumanMessage("no id")], 3);
    const session = await repo.open(threadId);
    const texts = async (leafId: string) =>
      (await session.buildContext({ leafId })).messages.map((m) =>
        contentText((m as { content: unknown }).content),
      );
    expect(await texts("cp-1")).toEqual(["first", "second"]);
    expect(await texts("cp-2")).toEqual(["second", "first"]);
    expect(await texts("cp-3")).toEqual(["second", "first", "no id"]);
    const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_id: "cp-2" } });
    const read = (tuple?.checkpoint.channel_values.messages ?? []) as BaseMessage[];
    expect(read.map((m) => m.id)).toEqual(["b", "a"]);
  });
});

describe.each(repos)(
  "a graph's messages with images and tool errors, checkpointed in %s",
  (_name, makeRepo) => {
    /** A graph that answers each message with `reply`, its thread's session, and its config. */
    async function thread(reply: () => BaseMessage[]) {
      const repo = await makeRepo();
      const saver = new CfSessionsSaver({ repo });
      const graph = new StateGraph(MessagesAnnotation)
        .addNode("model", () => ({ messages: reply() }))
        .addEdge(START, "model")
        .addEdge("model", END)
        .compile({ checkpointer: saver });
      const threadId = `media-${crypto.randomUUID()}`;
      const config = { configurable: { thread_id: threadId } };
      return { graph, config, session: async () => repo.open(await saver.sessionIdFor(threadId)) };
    }

    it("keeps a user's text when an image of theirs is a URL no session stores", async () => {
      const { graph, config, session } = await thread(() => [new AIMessage("A cat.")]);
      const asked = new HumanMessage({
        content: [
          { type: "text", text: "What is on this picture?" },
          { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
        ],
      });
      await graph.invoke({ messages: [asked] }, config);
      const context = await (await session()).buildContext();
      expect(context.messages.map((m) => [m.role, contentText((m as { content: unknown }).content)])).toEqual(
        [
          ["user", "What is on this picture?"],
          ["assistant", "A cat."],
        ],
      );
      // The graph reads its message back as it was.
      const state = await graph.getState(config);
      expect((state.values as { messages: BaseMessage[] }).messages[0]?.content).toEqual(asked.content);
    });

    it("keeps a tool's failure and its images in the result", async () => {
      const { graph, config, session } = await thread(() => [new AIMessage("Done.")]);
      const png = "iVBORw0KGgo=";
      const call = (id: string, name: string) =>
        new AIMessage({ content: "", tool_calls: [{ id, name, args: {}, type: "tool_call" }] });
      await graph.invoke(
        {
          messages: [
            new HumanMessage("Fetch, then take a screenshot."),
            call("call_f", "fetch"),
            new ToolMessage({ tool_call_id: "call_f", content: "timed out", status: "error" }),
            call("call_s", "screenshot"),
            new ToolMessage({
              tool_call_id: "call_s",
              content: [
                { type: "text", text: "the page" },
                { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } },
              ],
            }),
          ],
        },
        config,
      );
      const context = await (await session()).buildContext();
      expect(context.messages.filter((m) => m.role === "toolResult")).toMatchObject([
        {
          toolCallId: "call_f",
          toolName: "fetch",
          isError: true,
          content: [{ type: "text", text: "timed out" }],
        },
        {
          toolCallId: "call_s",
          toolName: "screenshot",
          isError: false,
          content: [
            { type: "text", text: "the page" },
            { type: "image", mimeType: "image/png", data: png },
          ],
        },
      ]);
    });
  },
);

describe("a graph's Anthropic thinking, signed or redacted", () => {
  const signed = { type: "thinking", thinking: "Ask the tool.", thinkingSignature: "sig-1" };
  const redacted = {
    type: "thinking",
    thinking: "[Reasoning redacted]",
    thinkingSignature: "opaque",
    redacted: true,
  };

  it("keeps the signature of a standard reasoning block, and redacted thinking, it writes", async () => {
    const repo = new MemoryRepo();
    const threadId = `signed-${crypto.randomUUID()}`;
    const saver = new CfSessionsSaver({ repo, threadIdIsSessionId: true });
    const response_metadata = { model_provider: "anthropic", model_name: "claude-sonnet-4-5" };
    let turn = 0;
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("model", () => ({
        messages: [
          // LangChain's standard blocks (`contentBlocks`), then the ones Anthropic's chat model keeps.
          ++turn === 1
            ? new AIMessage({
                content: [
                  { type: "reasoning", reasoning: "Ask the tool.", signature: "sig-1" },
                  { type: "non_standard", value: { type: "redacted_thinking", data: "opaque" } },
                  { type: "text", text: "Asking." },
                ],
                response_metadata,
              })
            : new AIMessage({
                content: [
                  { type: "thinking", thinking: "Ask the tool.", signature: "sig-1" },
                  { type: "redacted_thinking", data: "opaque" },
                  { type: "text", text: "Asking." },
                ],
                response_metadata,
              }),
        ],
      }))
      .addEdge(START, "model")
      .addEdge("model", END)
      .compile({ checkpointer: saver });
    const config = { configurable: { thread_id: threadId } };
    await graph.invoke({ messages: [new HumanMessage("Weather?")] }, config);
    await graph.invoke({ messages: [new HumanMessage("Again?")] }, config);
    const messages = (await (await repo.open(threadId)).buildContext()).messages as AssistantMessage[];
    expect([messages[1]?.content, messages[3]?.content]).toEqual([
      [signed, redacted, { type: "text", text: "Asking." }],
      [signed, redacted, { type: "text", text: "Asking." }],
    ]);
  });

  it("gives a graph the signature and redacted thinking of Anthropic thinking another door wrote", async () => {
    const repo = new MemoryRepo();
    const session = await repo.create({ id: `thought-${crypto.randomUUID()}` });
    await session.appendProviderMessage("anthropic", { role: "user", content: "Weather?" });
    await session.appendProviderMessage(
      "anthropic",
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Ask the tool.", signature: "sig-1" },
          { type: "redacted_thinking", data: "opaque" },
          { type: "text", text: "Asking." },
        ],
      },
      { model: { provider: "anthropic", modelId: "claude-sonnet-4-5" } },
    );
    const saver = new CfSessionsSaver({ repo, threadIdIsSessionId: true });
    const tuple = await saver.getTuple({ configurable: { thread_id: session.id } });
    const answer = ((tuple?.checkpoint.channel_values.messages ?? []) as BaseMessage[])[1];
    expect(answer?.content).toEqual([
      { type: "reasoning", reasoning: "Ask the tool.", signature: "sig-1" },
      { type: "non_standard", value: { type: "redacted_thinking", data: "opaque" } },
      { type: "text", text: "Asking." },
    ]);
  });
});
