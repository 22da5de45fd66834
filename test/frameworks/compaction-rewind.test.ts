import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph, type StateSnapshot } from "@langchain/langgraph";
import type { AgentInputItem } from "@openai/agents-core";
import type { UIMessage } from "ai";
import { beforeAll, describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/core";
import { MemoryRepo } from "../../src/core/memory";
import type { SessionRepo } from "../../src/core/repo";
import { rewindTo } from "../../src/core/rewind";
import type { Session } from "../../src/core/session";
import { CfSessionsChatStore } from "../../src/frameworks/ai-sdk";
import { CfSessionsSaver } from "../../src/frameworks/langgraph";
import { CfSessionsSession } from "../../src/frameworks/openai-agents";
import { adapterRepos } from "../support/adapter-repos";

/*
 * Going back in a compacted conversation through an adapter (the Agents SDK's `popItem`, a chat
 * saved with a regenerated answer or cut short): the summary stays, and what the compaction kept
 * up to that point follows it, for the adapter and for every other door reading the context.
 */

/** The context's messages as text: a compaction's summary as `summary: …`. */
async function contextTexts(session: Session): Promise<string[]> {
  return (await session.buildContext()).messages.map((message) => {
    if (message.role === "compactionSummary") return `summary: ${message.summary}`;
    const content = (message as { content: string | Array<{ text?: string }> }).content;
    return typeof content === "string" ? content : content.map((block) => block.text).join("");
  });
}

const said = (text: string): AgentInputItem => ({ type: "message", role: "user", content: text });
const answered = (text: string): AgentInputItem => ({
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text }],
});
const question = (text: string, timestamp: number): AgentMessage => ({
  role: "user",
  content: text,
  timestamp,
});
const reply = (texts: string[], timestamp: number): AgentMessage => ({
  role: "assistant",
  content: texts.map((text) => ({ type: "text" as const, text })),
  api: "openai-responses",
  provider: "openai",
  model: "gpt-test",
  usage: {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  stopReason: "stop",
  timestamp,
});

type ChatMessage = UIMessage;
const user = (id: string, text: string): ChatMessage => ({
  id,
  role: "user",
  parts: [{ type: "text", text }],
});
const assistant = (id: string, text: string): ChatMessage => ({
  id,
  role: "assistant",
  parts: [{ type: "text", text, state: "done" }],
});
const chatTexts = (messages: ChatMessage[]) =>
  messages.map((message) => message.parts.map((part) => (part.type === "text" ? part.text : "")).join(""));

/**
 * The UI goes on with the chat `held` as it holds it: saved again, nothing is written; with a
 * question more, the context goes on from the summary and the regenerated answer.
 */
async function goesOnAsHeld(store: CfSessionsChatStore, session: Session, held: ChatMessage[]) {
  const entries = (await session.getInfo()).entryCount;
  await store.saveChat({ chatId: session.id, messages: held });
  expect((await session.getInfo()).entryCount).toBe(entries);
  await store.saveChat({ chatId: session.id, messages: [...held, user("q3", "Three?")] });
  expect(await contextTexts(session)).toEqual(["summary: They counted to one.", "Two?", "Two!", "Three?"]);
}

/** A graph of one model node answering `re: <the last message>`. */
function echoGraph(saver: CfSessionsSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("model", ({ messages }) => ({
      messages: [new AIMessage(`re: ${String(messages.at(-1)?.content)}`)],
    }))
    .addEdge(START, "model")
    .addEdge("model", END)
    .compile({ checkpointer: saver });
}

const stateTexts = (state: StateSnapshot) =>
  (state.values as { messages: BaseMessage[] }).messages.map((message) => String(message.content));

/**
 * A graph asked one, two and three, then compacted by another door keeping from "two", and the
 * checkpoint just after "re: two" (to go back to with LangGraph's time travel).
 */
async function compactedThread(repo: SessionRepo) {
  const saver = new CfSessionsSaver({ repo });
  const graph = echoGraph(saver);
  const config = { configurable: { thread_id: `rewind-graph-${crypto.randomUUID()}` } };
  for (const text of ["one", "two", "three"])
    await graph.invoke({ messages: [new HumanMessage(text)] }, config);
  const session = await repo.open(await saver.sessionIdFor(config.configurable.thread_id));
  const messages = await session.getEntries({ type: "message" });
  await session.appendCompaction({
    summary: "They said one.",
    tokensBefore: 10,
    firstKeptEntryId: messages[2]?.id as string,
  });
  let afterTwo: StateSnapshot | undefined;
  for await (const state of graph.getStateHistory(config)) {
    if (stateTexts(state).join("|") === "one|re: one|two|re: two" && state.next.length === 0)
      afterTwo = state;
  }
  if (!afterTwo) throw new Error("no checkpoint after the second answer");
  return { graph, config, session, afterTwo };
}

const repos = adapterRepos();

describe.each(repos)("going back across a compaction on %s", (_name, makeRepo) => {
  let repo: SessionRepo;
  beforeAll(async () => {
    repo = await makeRepo();
  });

  it("a graph run again from a checkpoint the compaction kept keeps the summary, and its state the whole conversation", async () => {
    const { graph, config, session, afterTwo } = await compactedThread(repo);
    await graph.invoke({ messages: [new HumanMessage("again")] }, afterTwo.config);
    expect(await contextTexts(session)).toEqual([
      "summary: They said one.",
      "two",
      "re: two",
      "again",
      "re: again",
    ]);
    // LangGraph reads its checkpoints as they were put, compactions aside.
    expect(stateTexts(await graph.getState(config))).toEqual([
      "one",
      "re: one",
      "two",
      "re: two",
      "again",
      "re: again",
    ]);
    expect(stateTexts(await graph.getState(afterTwo.config))).toEqual(["one", "re: one", "two", "re: two"]);
  });

  it("a graph's state updated at a checkpoint the compaction kept keeps the summary", async () => {
    const { graph, config, session, afterTwo } = await compactedThread(repo);
    await graph.updateState(afterTwo.config, { messages: [new HumanMessage("edited")] });
    expect(await contextTexts(session)).toEqual(["summary: They said one.", "two", "re: two", "edited"]);
    expect(stateTexts(await graph.getState(config))).toEqual(["one", "re: one", "two", "re: two", "edited"]);
    // Going on from there appends under it, the summary still first.
    await graph.invoke({ messages: [new HumanMessage("more")] }, config);
    expect(await contextTexts(session)).toEqual([
      "summary: They said one.",
      "two",
      "re: two",
      "edited",
      "more",
      "re: more",
    ]);
  });

  it("popItem into the entries a compaction kept before it keeps the summary, down to the summary alone", async () => {
    const sessionId = `rewind-agents-kept-${crypto.randomUUID()}`;
    const agents = new CfSessionsSession({ repo, sessionId });
    await agents.addItems([
      said("One?"),
      answered("One."),
      said("Two?"),
      answered("Two."),
      said("Three?"),
      answered("Three."),
    ]);
    const session = await repo.open(sessionId);
    const branch = await session.getBranch();
    await session.appendCompaction({
      summary: "They counted to one.",
      tokensBefore: 10,
      firstKeptEntryId: branch[2]?.id as string,
    });
    const contexts: string[][] = [
      ["summary: They counted to one.", "Two?", "Two.", "Three?", "Three."],
      ["summary: They counted to one.", "Two?", "Two.", "Three?"],
      ["summary: They counted to one.", "Two?", "Two."],
      ["summary: They counted to one.", "Two?"],
      ["summary: They counted to one."],
    ];
    let before = await agents.getItems();
    expect(before).toHaveLength(5);
    expect(await contextTexts(session)).toEqual(contexts[0]);
    for (const expected of contexts.slice(1)) {
      expect(await agents.popItem()).toEqual(before.at(-1));
      const after = await agents.getItems();
      expect(after).toEqual(before.slice(0, -1));
      expect(await contextTexts(session)).toEqual(expected);
      before = after;
    }
    // The conversation goes on from there, the summary first.
    await agents.addItems([said("Again?")]);
    expect(await agents.getItems()).toEqual([...before, said("Again?")]);
    expect(await contextTexts(session)).toEqual(["summary: They counted to one.", "Again?"]);
  });

  it("popItem of one block of another door's kept answer keeps the summary and the rest of the answer", async () => {
    const session = await repo.create({ id: `rewind-agents-block-${crypto.randomUUID()}` });
    await session.appendMessage(question("One?", 1));
    await session.appendMessage(reply(["One."], 2));
    const kept = await session.appendMessage(question("Two?", 3));
    await session.appendMessage(reply(["Two.", "Really."], 4));
    await session.appendCompaction({
      summary: "They counted to one.",
      tokensBefore: 10,
      firstKeptEntryId: kept,
    });
    const agents = new CfSessionsSession({ repo, sessionId: session.id });
    const before = await agents.getItems();
    expect(before).toHaveLength(4);
    await agents.popItem();
    expect(await agents.getItems()).toEqual(before.slice(0, -1));
    expect(await contextTexts(session)).toEqual(["summary: They counted to one.", "Two?", "Two."]);
  });

  it("popItem into a compaction's retained tail keeps its summary and the rest of the tail", async () => {
    const session = await repo.create({ id: `rewind-agents-tail-${crypto.randomUUID()}` });
    await session.appendMessage(question("One?", 1));
    await session.appendMessage(reply(["One."], 2));
    await session.appendCompaction({
      summary: "They counted to one.",
      tokensBefore: 10,
      retainedTail: [question("Two?", 3), reply(["Two."], 4)],
    });
    const agents = new CfSessionsSession({ repo, sessionId: session.id });
    const before = await agents.getItems();
    expect(before).toHaveLength(3);
    await agents.popItem();
    expect(await agents.getItems()).toEqual(before.slice(0, -1));
    expect(await contextTexts(session)).toEqual(["summary: They counted to one.", "Two?"]);
    await agents.popItem();
    expect(await agents.getItems()).toEqual(before.slice(0, -2));
    expect(await contextTexts(session)).toEqual(["summary: They counted to one."]);
  });

  it("a chat regenerating an answer the compaction kept before it keeps the summary, and goes on from the UI's copy", async () => {
    const store = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const session = await repo.create({ id: `rewind-chat-kept-${crypto.randomUUID()}` });
    const chatId = session.id;
    await store.saveChat({
      chatId,
      messages: [user("q1", "One?"), assistant("a1", "One."), user("q2", "Two?"), assistant("a2", "Two.")],
    });
    const q2 = (await session.getBranch())[2]?.id as string;
    await session.appendCompaction({
      summary: "They counted to one.",
      tokensBefore: 10,
      firstKeptEntryId: q2,
    });
    const loaded = await store.loadChat(chatId);
    expect(loaded.map(({ id }) => id).slice(1)).toEqual(["q2", "a2"]);

    // Regenerated: the last answer replaced.
    const regenerated = [...loaded.slice(0, -1), assistant("a2b", "Two!")];
    await store.saveChat({ chatId, messages: regenerated });
    expect(chatTexts(await store.loadChat(chatId)).slice(1)).toEqual(["Two?", "Two!"]);
    expect((await store.loadChat(chatId)).map(({ id }) => id).slice(1)).toEqual(["q2", "a2b"]);
    expect(await contextTexts(session)).toEqual(["summary: They counted to one.", "Two?", "Two!"]);

    await goesOnAsHeld(store, session, regenerated);

    // Cut short: back to the kept question, then to the summary alone.
    await store.saveChat({ chatId, messages: regenerated.slice(0, 2) });
    expect((await store.loadChat(chatId)).map(({ id }) => id).slice(1)).toEqual(["q2"]);
    expect(await contextTexts(session)).toEqual(["summary: They counted to one.", "Two?"]);
    await store.saveChat({ chatId, messages: regenerated.slice(0, 1) });
    expect(await store.loadChat(chatId)).toHaveLength(1);
    expect(await contextTexts(session)).toEqual(["summary: They counted to one."]);
  });

  it("a chat regenerating an answer of a compaction's retained tail keeps the summary and the question, not both answers", async () => {
    const store = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const session = await repo.create({ id: `rewind-chat-tail-${crypto.randomUUID()}` });
    const chatId = session.id;
    await store.saveChat({
      chatId,
      messages: [user("q1", "One?"), assistant("a1", "One."), user("q2", "Two?"), assistant("a2", "Two.")],
    });
    await session.appendCompaction({
      summary: "They counted to one.",
      tokensBefore: 10,
      retainedTail: [question("Two?", 3), reply(["Two."], 4)],
    });
    const loaded = await store.loadChat(chatId);
    expect(chatTexts(loaded).slice(1)).toEqual(["Two?", "Two."]);

    const regenerated = [...loaded.slice(0, -1), assistant("a2b", "Two!")];
    await store.saveChat({ chatId, messages: regenerated });
    expect(chatTexts(await store.loadChat(chatId)).slice(1)).toEqual(["Two?", "Two!"]);
    expect(await contextTexts(session)).toEqual(["summary: They counted to one.", "Two?", "Two!"]);

    await goesOnAsHeld(store, session, regenerated);

    // Cut back to the summary alone.
    await store.saveChat({ chatId, messages: regenerated.slice(0, 1) });
    expect(await store.loadChat(chatId)).toHaveLength(1);
    expect(await contextTexts(session)).toEqual(["summary: They counted to one."]);
  });
});

describe("rewindTo", () => {
  /** q1 a1 q2 a2 q3, then a compaction keeping from q2, on a session in memory. */
  async function compacted() {
    const session = await new MemoryRepo().create({ id: `rewind-rule-${crypto.randomUUID()}` });
    const ids: string[] = [];
    for (const [index, text] of ["One?", "One.", "Two?", "Two.", "Three?"].entries()) {
      const message = index % 2 === 0 ? question(text, index) : reply([text], index);
      ids.push(await session.appendMessage(message));
    }
    const compaction = await session.appendCompaction({
      summary: "They counted to one.",
      tokensBefore: 10,
      firstKeptEntryId: ids[2],
      details: { readFiles: ["a.md"], modifiedFiles: [] },
    });
    return { session, ids, compaction };
  }

  /** The context after going back to `point` as the rule says. */
  async function goneBack(session: Session, point: Parameters<typeof rewindTo>[1]) {
    const rewind = rewindTo(await session.getBranch(), point);
    if (rewind.entries.length > 0) await session.appendEntries(rewind.entries);
    else await session.setLeafId(rewind.parentId);
    return { rewind, texts: await contextTexts(session) };
  }

  it("keeps the summary and the kept entries up to a point among them, the details too", async () => {
    const { session, ids } = await compacted();
    const { rewind, texts } = await goneBack(session, { entryId: ids[3] as string });
    expect(texts).toEqual(["summary: They counted to one.", "Two?", "Two."]);
    expect(rewind.entries).toMatchObject([
      { type: "compaction", parentId: ids[3], firstKeptEntryId: ids[2], details: { readFiles: ["a.md"] } },
    ]);
    expect(rewind.parentId).toBe(rewind.entries[0]?.id);
  });

  it("keeps the summary alone just before the first kept entry, and the whole history further back", async () => {
    const { session, ids, compaction } = await compacted();
    expect((await goneBack(session, { entryId: ids[1] as string })).texts).toEqual([
      "summary: They counted to one.",
    ]);
    await session.setLeafId(compaction);
    expect((await goneBack(session, { entryId: ids[0] as string })).texts).toEqual(["One?"]);
  });

  it("moves the head only for a point after the compaction or just before it", async () => {
    const { session, ids, compaction } = await compacted();
    const after = await session.appendMessage(reply(["Three."], 6));
    await session.appendMessage(question("Four?", 7));
    expect(rewindTo(await session.getBranch(), { entryId: after })).toEqual({ parentId: after, entries: [] });
    expect(rewindTo(await session.getBranch(), { entryId: ids[4] as string })).toEqual({
      parentId: compaction,
      entries: [],
    });
  });

  it("cuts a retained tail to the part given, under the compaction's parent, and leaves it whole as it is", async () => {
    const session = await new MemoryRepo().create({ id: `rewind-rule-tail-${crypto.randomUUID()}` });
    const before = await session.appendMessage(question("One?", 1));
    const tail = [question("Two?", 2), reply(["Two."], 3)];
    const compaction = await session.appendCompaction({
      summary: "One.",
      tokensBefore: 5,
      retainedTail: tail,
    });
    const branch = await session.getBranch();
    expect(rewindTo(branch, { entryId: compaction, retainedTail: tail })).toEqual({
      parentId: compaction,
      entries: [],
    });
    const { rewind, texts } = await goneBack(session, {
      entryId: compaction,
      retainedTail: tail.slice(0, 1),
    });
    expect(rewind.entries).toMatchObject([{ type: "compaction", parentId: before, summary: "One." }]);
    expect(texts).toEqual(["summary: One.", "Two?"]);
  });
});
