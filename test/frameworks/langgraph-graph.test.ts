import { AIMessage, HumanMessage } from "@langchain/core/messages";
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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/client";
import { MemoryRepo, type SessionRepo, type TreeNode, walkTree } from "../../src/core/internal";
import { CfSessionsSaver } from "../../src/frameworks/langgraph";
import { type DevServer, startDevServer } from "../support/dev-server";

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

let server: DevServer;
beforeAll(async () => {
  server = await startDevServer();
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

let reference: Run;
beforeAll(async () => {
  reference = await script(new MemorySaver(), "reference");
});

const repos: Array<[string, () => SessionRepo]> = [
  ["the service", () => createClient({ baseUrl: server.url })],
  ["a MemoryRepo", () => new MemoryRepo()],
];

describe.each(repos)("a StateGraph checkpointed in %s", (_name, makeRepo) => {
  let repo: SessionRepo;
  let saver: CfSessionsSaver;
  let run: Run;
  const threadId = `graph thread/${crypto.randomUUID()}`;

  beforeAll(async () => {
    repo = makeRepo();
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
    const checkpointChildren = (node: TreeNode | undefined) =>
      (node?.children ?? []).filter((child) => child.type === "custom").map((child) => child.id);
    // The checkpoint before the review has two checkpoint children: the first run's and the fork.
    const before = byId.get(run.beforeReview);
    const children = checkpointChildren(before);
    expect(children).toContain(run.forked);
    const branches = await Promise.all(
      children.map(async (id) => ((await session.getEntry(id)) as { customType?: string }).customType),
    );
    expect(branches.filter((type) => type === "langgraph:checkpoint").length).toBe(2);
    // The head is where the graph stopped last: the fork's branch, not the first answer's.
    const branch = await session.getBranch();
    expect(branch.map((entry) => entry.id)).toContain(run.forked);
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
