import { describe, expect, it } from "vitest";
import {
  checkHistory,
  type FinalState,
  type GenerationOp,
  mark,
  type StoredEntryLike,
} from "../reliability/history";

/*
 * The soak's history checker on generations: given what a run did and what the service holds, it
 * passes a history that kept the promise and names each way one can break it.
 */

const words = [mark(0, 0), mark(1, 0), mark(2, 0)];

const answer = (seq: number, text: string, id = "g1"): StoredEntryLike => ({
  id,
  seq,
  type: "message",
  parentId: "q",
  message: { role: "assistant", content: [{ type: "text", text }] },
});

const question: StoredEntryLike = { id: "q", seq: 1, type: "message", parentId: null };

function generation(outcome: GenerationOp["outcome"], seq?: number): GenerationOp {
  return { kind: "generation", session: "s", generation: "g1", marks: words, outcome, start: 0, end: 1, seq };
}

async function verdict(op: GenerationOp, entries: StoredEntryLike[]) {
  const state: FinalState = {
    sessions: new Map([["s", entries]]),
    named: new Set(["s"]),
    listed: new Set(["s"]),
    branch: async () => [],
  };
  return (await checkHistory([op], [], [], state)).violations;
}

describe("the history checker on generations", () => {
  it("passes a completed answer holding every chunk once, in order, at its answered seq", async () => {
    expect(await verdict(generation("acked", 2), [question, answer(2, words.join(" "))])).toEqual([]);
  });

  it("passes an unanswered one that left nothing, or the first of its chunks", async () => {
    expect(await verdict(generation("unknown"), [question])).toEqual([]);
    expect(await verdict(generation("unknown"), [question, answer(2, words[0] as string)])).toEqual([]);
  });

  it("names a completed answer that is missing, short of a chunk, or at another seq", async () => {
    expect(await verdict(generation("acked", 2), [question])).toEqual([
      "s: acknowledged generation g1 has no entry",
    ]);
    expect(await verdict(generation("acked", 2), [question, answer(2, `${words[0]} ${words[1]}`)])).toEqual([
      "s: acknowledged generation g1 holds 2 of its 3 chunks",
    ]);
    expect(await verdict(generation("acked", 2), [question, answer(3, words.join(" "))])).toEqual([
      "s: generation g1 answered seq 2 but is stored at 3",
    ]);
  });

  it("names a chunk written twice, chunks out of order or not a prefix, and an answer stored twice", async () => {
    const [a, b, c] = words as [string, string, string];
    expect(await verdict(generation("acked", 2), [question, answer(2, `${a} ${b} ${b} ${c}`)])).toEqual([
      `s: a chunk of generation g1 (${b}) is stored more than once or outside its answer`,
    ]);
    expect(await verdict(generation("unknown"), [question, answer(2, `${b} ${a}`)])).toContain(
      "s: the chunks of generation g1 are out of order",
    );
    expect(await verdict(generation("unknown"), [question, answer(2, `${a} ${c}`)])).toEqual([
      `s: generation g1 holds chunks that are not a prefix of those sent: ${a} ${c}`,
    ]);
    expect(await verdict(generation("unknown"), [question, answer(2, a), answer(3, a, "g1")])).toContain(
      "s: generation g1 is stored 2 times",
    );
  });
});
