import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import type { AgentInputItem } from "@openai/agents-core";
import { createClient } from "../src/client";
import type { AgentMessage } from "../src/core/messages";
import { CfSessionsSaver } from "../src/frameworks/langgraph";
import { CfSessionsSession } from "../src/frameworks/openai-agents";

/*
 * What a framework's write costs over HTTP next to our own append of the same: one LangGraph `put`
 * (a checkpoint whose changed channel holds ~1 KB) against a plain append of a ~1 KB message, one
 * `put` of a graph's step that adds a ~1 KB LangChain message to its messages channel (the message
 * becomes an entry, the checkpoint references the thread's messages) against the same, and
 * one Agents `addItems` of a turn (a question, a `function_call`, its result and the answer, ~1 KB
 * in all) against a plain append of the same turn as our four messages in one request. Each is
 * measured in the steady state (the thread or session already open), all interleaved through the
 * same client so that they see the same machine.
 */

export interface FrameworkBench {
  url: string;
  quick: boolean;
  message(i: number, size: number): AgentMessage;
  record(
    name: string,
    unit: string,
    samples: number[],
    budget?: { limit: number; note?: string },
  ): { median: number };
  ratio(name: string, value: number, limit: number): void;
}

function text(i: number, size: number): string {
  return `${i} ${"lorem ipsum dolor sit amet ".repeat(Math.ceil(size / 27))}`.slice(0, size);
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

export async function frameworkWrites(bench: FrameworkBench): Promise<void> {
  process.stderr.write("framework writes over HTTP\n");
  const repo = createClient({ baseUrl: bench.url });
  const plain = await repo.create({ id: "framework-plain" });
  const plainTurns = await repo.create({ id: "framework-plain-turns" });
  const saver = new CfSessionsSaver({ repo });
  const agents = new CfSessionsSession({ repo, sessionId: "framework-agents" });
  const thread = { thread_id: "framework-langgraph", checkpoint_ns: "" };
  const metadata = { source: "loop" as const, step: 0, parents: {} };

  // The first write of each opens (and creates) its session; the steady state is measured after.
  let parent: string | undefined;
  const put = async (i: number) => {
    const id = `cp-${String(i).padStart(8, "0")}`;
    const checkpoint = {
      v: 4,
      id,
      ts: new Date().toISOString(),
      channel_values: { messages: text(i, 1000) },
      channel_versions: { messages: i + 1 },
      versions_seen: { agent: { messages: i } },
    };
    await saver.put({ configurable: { ...thread, checkpoint_id: parent } }, checkpoint, metadata, {
      messages: i + 1,
    });
    parent = id;
  };
  // A graph's messages channel: the same message objects from step to step, one more each step.
  const messageThread = { thread_id: "framework-langgraph-messages", checkpoint_ns: "" };
  const conversation: BaseMessage[] = [];
  let messageParent: string | undefined;
  const putMessage = async (i: number) => {
    const id = `cp-${String(i).padStart(8, "0")}`;
    const said = text(i, 1000);
    conversation.push(
      i % 2 === 0
        ? new HumanMessage({ id: `m-${i}`, content: said })
        : new AIMessage({ id: `m-${i}`, content: said }),
    );
    const checkpoint = {
      v: 4,
      id,
      ts: new Date().toISOString(),
      channel_values: { messages: [...conversation] },
      channel_versions: { messages: i + 1 },
      versions_seen: { agent: { messages: i } },
    };
    await saver.put(
      { configurable: { ...messageThread, checkpoint_id: messageParent } },
      checkpoint,
      metadata,
      {
        messages: i + 1,
      },
    );
    messageParent = id;
  };
  const turnItems = (i: number): AgentInputItem[] => [
    { type: "message", role: "user", content: [{ type: "input_text", text: text(i, 700) }] },
    {
      type: "function_call",
      callId: `call-${i}`,
      name: "lookup",
      arguments: JSON.stringify({ query: text(i, 60) }),
      status: "completed",
    },
    {
      type: "function_call_result",
      callId: `call-${i}`,
      name: "lookup",
      status: "completed",
      output: text(i, 150),
    },
    {
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: text(i, 100) }],
    },
  ];
  const turnMessages = (i: number): AgentMessage[] => {
    // Odd numbers give an assistant message.
    const answer = bench.message(2 * i + 1, 100) as AgentMessage & { role: "assistant" };
    return [
      { role: "user", content: [{ type: "text", text: text(i, 700) }], timestamp: Date.now() },
      {
        ...answer,
        content: [{ type: "toolCall", id: `call-${i}`, name: "lookup", arguments: { query: text(i, 60) } }],
        stopReason: "toolUse",
      },
      {
        role: "toolResult",
        toolCallId: `call-${i}`,
        toolName: "lookup",
        content: [{ type: "text", text: text(i, 150) }],
        isError: false,
        timestamp: Date.now(),
      },
      answer,
    ];
  };
  const plainTurn = (i: number) =>
    plainTurns.appendEntries(turnMessages(i).map((message) => ({ type: "message" as const, message })));
  await put(0);
  await putMessage(0);
  await agents.addItems(turnItems(0));
  await plain.appendMessage(bench.message(0, 1000));
  await plainTurn(0);

  const appends: number[] = [];
  const puts: number[] = [];
  const messagePuts: number[] = [];
  const adds: number[] = [];
  const turns: number[] = [];
  const count = bench.quick ? 200 : 1000;
  for (let i = 1; i <= count; i++) {
    appends.push(await timed(() => plain.appendMessage(bench.message(i, 1000))));
    puts.push(await timed(() => put(i)));
    messagePuts.push(await timed(() => putMessage(i)));
    turns.push(await timed(() => plainTurn(i)));
    adds.push(await timed(() => agents.addItems(turnItems(i))));
  }
  const warm = (samples: number[]) => samples.slice(20);
  const append = bench.record(
    "plain append of a 1 KB message over HTTP (the client), p50",
    "ms",
    warm(appends),
  );
  const putStats = bench.record("LangGraph put of a 1 KB checkpoint over HTTP, p50", "ms", warm(puts), {
    limit: 1.3 * append.median,
    note: "1.3 × the plain append",
  });
  const messagePutStats = bench.record(
    "LangGraph put of a step adding a 1 KB message to its messages channel over HTTP, p50",
    "ms",
    warm(messagePuts),
    { limit: 1.3 * append.median, note: "1.3 × the plain append" },
  );
  const turn = bench.record(
    "plain append of a turn (4 messages, 1 KB, one request) over HTTP, p50",
    "ms",
    warm(turns),
  );
  const addStats = bench.record(
    "Agents addItems of a turn (4 items, 1 KB) over HTTP, p50",
    "ms",
    warm(adds),
    {
      limit: 1.3 * turn.median,
      note: "1.3 × the plain append of the turn",
    },
  );
  bench.ratio("LangGraph put p50 / plain append p50", putStats.median / append.median, 1.3);
  bench.ratio(
    "LangGraph put of a message p50 / plain append p50",
    messagePutStats.median / append.median,
    1.3,
  );
  bench.ratio("Agents addItems p50 / plain append of the turn p50", addStats.median / turn.median, 1.3);
}
