import type { AgentInputItem } from "@openai/agents-core";
import { createClient } from "../src/client";
import type { AgentMessage } from "../src/core/internal";
import { CfSessionsSaver } from "../src/frameworks/langgraph";
import { CfSessionsSession } from "../src/frameworks/openai-agents";

/*
 * What a framework's write costs over HTTP next to our own append of the same size: one LangGraph
 * `put` (a checkpoint whose changed channel holds ~1 KB) and one Agents `addItems` (one ~1 KB
 * item), each in the steady state (the thread or session already open), interleaved with plain
 * appends of a ~1 KB message through the same client so that all three see the same machine.
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
  const item = (i: number): AgentInputItem => ({
    type: "message",
    role: "user",
    content: [{ type: "input_text", text: text(i, 1000) }],
  });
  await put(0);
  await agents.addItems([item(0)]);
  await plain.appendMessage(bench.message(0, 1000));

  const appends: number[] = [];
  const puts: number[] = [];
  const adds: number[] = [];
  const count = bench.quick ? 200 : 1000;
  for (let i = 1; i <= count; i++) {
    appends.push(await timed(() => plain.appendMessage(bench.message(i, 1000))));
    puts.push(await timed(() => put(i)));
    adds.push(await timed(() => agents.addItems([item(i)])));
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
  const addStats = bench.record("Agents addItems of one 1 KB item over HTTP, p50", "ms", warm(adds), {
    limit: 1.3 * append.median,
    note: "1.3 × the plain append",
  });
  bench.ratio("LangGraph put p50 / plain append p50", putStats.median / append.median, 1.3);
  bench.ratio("Agents addItems p50 / plain append p50", addStats.median / append.median, 1.3);
}
