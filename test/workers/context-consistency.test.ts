import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EntryInput } from "../../src/core/entries";
import { newId } from "../../src/core/ids";
import { MemoryRepo } from "../../src/core/memory";
import type { Session } from "../../src/core/session";
import type { DurableEnv } from "../../src/durable/internal";
import { DurableRepo, sessionObjectName } from "../../src/durable/internal";
import { assistant, toolResult, user } from "../conformance/fixtures";

/*
 * The object keeps the context at the head in memory and grows it as entries arrive. Whatever
 * happens to the session (appends, branches, head moves, compactions, labels, settings, the
 * object being evicted, context edits of earlier messages, system messages), the context it
 * answers is the one built from scratch by the memory backend after the same operations.
 */

type Op =
  | { kind: "append"; role: "user" | "assistant" | "tools" | "custom"; size: number }
  | { kind: "branch"; back: number }
  | { kind: "move"; back: number }
  | { kind: "compact"; keep: number; retainTail: boolean }
  | { kind: "label"; back: number }
  | { kind: "setting"; level: "low" | "high" }
  | { kind: "edit"; back: number; omit: boolean }
  | { kind: "system"; section: string }
  | { kind: "evict" };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("append" as const),
      role: fc.constantFrom("user" as const, "assistant" as const, "tools" as const, "custom" as const),
      size: fc.integer({ min: 1, max: 200 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("branch" as const), back: fc.integer({ min: 1, max: 5 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("move" as const), back: fc.integer({ min: 0, max: 5 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("compact" as const),
      keep: fc.integer({ min: 0, max: 300 }),
      retainTail: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("label" as const), back: fc.integer({ min: 0, max: 3 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("setting" as const),
      level: fc.constantFrom("low" as const, "high" as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("edit" as const),
      back: fc.integer({ min: 0, max: 6 }),
      omit: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("system" as const), section: fc.constantFrom("a", "b") }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "evict" as const }) },
);

const words = (n: number) => "word ".repeat(n).trim();

const timestamp = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();

function entriesFor(o: Extract<Op, { kind: "append" }>, n: number): EntryInput[] {
  const id = `x${n}`;
  const at = timestamp(n);
  if (o.role === "user") return [{ type: "message", id, timestamp: at, message: user(words(o.size)) }];
  if (o.role === "assistant")
    return [{ type: "message", id, timestamp: at, message: assistant(words(o.size)) }];
  if (o.role === "custom") {
    return [
      {
        type: "custom_message",
        id,
        timestamp: at,
        customType: "note",
        content: words(o.size),
        display: true,
      },
    ];
  }
  return [
    {
      type: "message",
      id,
      timestamp: at,
      message: assistant("call", { toolCalls: [{ id: `c${n}`, name: "read", arguments: { path: "a" } }] }),
    },
    { type: "message", id: `${id}r`, timestamp: at, message: toolResult(`c${n}`, "read", words(o.size)) },
  ];
}

describe("the context kept at the head", () => {
  it("always equals the context built from scratch", async () => {
    let counter = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 3, maxLength: 25 }), async (ops) => {
        const id = `cc-${newId()}`;
        const durable: Session = await new DurableRepo(env as unknown as DurableEnv, "consistency").create({
          id,
        });
        const memory: Session = await new MemoryRepo().create({ id });
        // Both stores get the same entries, timestamps included (projections carry them).
        const both = async (run: (s: Session) => Promise<unknown>) => {
          await run(memory);
          await run(durable);
        };
        for (const o of ops) {
          const path = await memory.getBranch();
          const back = (n: number) => path[Math.max(0, path.length - 1 - n)];
          if (o.kind === "append") {
            const entries = entriesFor(o, counter++);
            await both((s) => s.appendEntries(entries));
          } else if (o.kind === "branch") {
            const target = back(o.back);
            if (!target) continue;
            const n = counter++;
            const entry: EntryInput = {
              type: "message",
              id: `b${n}`,
              timestamp: timestamp(n),
              parentId: target.id,
              message: user("another way"),
            };
            await both((s) => s.appendEntry(entry));
          } else if (o.kind === "move") {
            const target = back(o.back);
            if (target) await both((s) => s.setLeafId(target.id));
          } else if (o.kind === "compact") {
            try {
              await memory.compact({ keepRecentTokens: o.keep, retainTail: o.retainTail, summary: "S" });
            } catch {
              continue;
            }
            const written = (await memory.getBranch()).at(-1) as EntryInput;
            await durable.appendEntry(written);
          } else if (o.kind === "label") {
            const target = back(o.back);
            if (target) {
              const n = counter++;
              const entry: EntryInput = {
                type: "label",
                id: `l${n}`,
                timestamp: timestamp(n),
                targetId: target.id,
                label: "mark",
              };
              await both((s) => s.appendEntry(entry));
            }
          } else if (o.kind === "edit") {
            const editable = path.filter(
              (e) =>
                e.type === "custom_message" ||
                (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)),
            );
            const target = editable[Math.max(0, editable.length - 1 - o.back)];
            if (!target) continue;
            const n = counter++;
            const entry: EntryInput = {
              type: "context_edit",
              id: `e${n}`,
              timestamp: timestamp(n),
              targetId: target.id,
              replacement: o.omit ? null : { content: `edited ${n}` },
            };
            await both((s) => s.appendEntry(entry));
          } else if (o.kind === "system") {
            const n = counter++;
            const entry: EntryInput = {
              type: "message",
              id: `s${n}`,
              timestamp: timestamp(n),
              message: {
                role: "system",
                content: "",
                sections: { [o.section]: `section ${n}` },
                timestamp: n,
              },
            };
            await both((s) => s.appendEntry(entry));
          } else if (o.kind === "setting") {
            const n = counter++;
            const entry: EntryInput = {
              type: "thinking_level_change",
              id: `t${n}`,
              timestamp: timestamp(n),
              thinkingLevel: o.level,
            };
            await both((s) => s.appendEntry(entry));
          } else {
            await evictDurableObject(env.SESSIONS.getByName(sessionObjectName("consistency", id))).catch(
              () => undefined,
            );
          }
          expect(await durable.buildContext()).toEqual(await memory.buildContext());
        }
        for (const entry of await memory.getBranch()) {
          expect(await durable.buildContext({ leafId: entry.id })).toEqual(
            await memory.buildContext({ leafId: entry.id }),
          );
        }
      }),
      { seed: 424242, numRuns: 40 },
    );
  });
});
