import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EntryInput } from "../../src/core/entries";
import { SessionError } from "../../src/core/errors";
import { canonicalJson } from "../../src/core/json";
import { MemoryStorage } from "../../src/core/memory";
import { AgentMessage } from "../../src/core/messages";
import { Session } from "../../src/core/session";
import type { TreeNode, TreeRow, TreeStep } from "../../src/core/tree";
import { buildTree, treeFromSteps, treeToJson } from "../../src/core/tree";
import { TreeShape } from "../../src/core/tree-order";
import { drawTree, TreeLines } from "../../src/core/tree-text";
import { treeJson } from "../../src/http/stream";
import { expectCode } from "../conformance/storage";
import { seededRandom } from "../support/random";

describe("canonical JSON", () => {
  it("is the same for the same content in any key order", () => {
    expect(canonicalJson({ b: 1, a: [{ y: 2, x: null }] })).toBe(
      canonicalJson({ a: [{ x: null, y: 2 }], b: 1 }),
    );
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: "1" }));
    expect(canonicalJson({ a: undefined, b: 2 })).toBe('{"b":2}');
  });
});

describe("tree JSON", () => {
  it("writes what JSON.stringify writes for a branched tree", () => {
    const tree = buildTree(
      [
        { id: "a", parentId: null, type: "message", timestamp: "t", role: "user" },
        { id: "b", parentId: "a", type: "message", timestamp: "t", role: "assistant" },
        { id: "c", parentId: "a", type: "label", timestamp: "t" },
        { id: "d", parentId: "b", type: "model_change", timestamp: "t" },
        { id: "e", parentId: null, type: "session_info", timestamp: "t" },
      ],
      { b: "mark" },
    );
    expect(treeToJson(tree)).toBe(JSON.stringify(tree));
    expect(treeToJson([])).toBe("[]");
  });

  it("attaches children listed before their parent", () => {
    const tree: TreeNode[] = buildTree(
      [
        { id: "child", parentId: "parent", type: "message", timestamp: "t" },
        { id: "parent", parentId: null, type: "message", timestamp: "t" },
      ],
      {},
    );
    expect(tree.map((n) => n.id)).toEqual(["parent"]);
    expect(tree[0]?.children.map((n) => n.id)).toEqual(["child"]);
  });
});

describe("tree order", () => {
  /**
   * A random forest (each node's parent made before it), appended in a shuffled order so that some
   * children come before their parents, some pointing at entries that are not there.
   */
  function randomRows(seed: number): { rows: TreeRow[]; labels: Record<string, string> } {
    const random = seededRandom(seed);
    const count = 1 + Math.floor(random() * 80);
    const parents = Array.from({ length: count }, (_, i) => {
      const draw = random();
      if (i === 0 || draw < 0.1) return null;
      if (draw < 0.15) return `ghost${i}`;
      // Mostly the node just before (chains), else any node before.
      return `n${draw < 0.6 ? i - 1 : Math.floor(random() * i)}`;
    });
    const order = Array.from({ length: count }, (_, i) => i);
    for (let i = count - 1; i > 0; i--) {
      if (random() < 0.2) {
        const j = Math.floor(random() * (i + 1));
        [order[i], order[j]] = [order[j] as number, order[i] as number];
      }
    }
    const labels: Record<string, string> = {};
    const rows = order.map((i): TreeRow => {
      if (random() < 0.2) labels[`n${i}`] = `label ${i}`;
      const row: TreeRow = { id: `n${i}`, parentId: parents[i] ?? null, type: "message", timestamp: "t" };
      return random() < 0.5 ? { ...row, role: "user" } : { ...row, type: "label" };
    });
    return { rows, labels };
  }

  /** The steps of the tree of `rows` from its shape, in pages of `size`. */
  async function* steps(rows: TreeRow[], labels: Record<string, string>, size: number) {
    const seqOf = new Map(rows.map((row, i) => [row.id, i + 1]));
    const shape = new TreeShape();
    for (let from = 0; from < rows.length; from += size) {
      const page = rows.slice(from, from + size);
      shape.add(
        page.map((row) => seqOf.get(row.id) as number),
        page.map((row) => (row.parentId === null ? 0 : (seqOf.get(row.parentId) ?? 1_000_000))),
      );
    }
    const { seqs, closes } = shape.order();
    for (let from = 0; from < seqs.length; from += size) {
      yield Array.from(seqs.subarray(from, from + size), (seq, i): TreeStep => {
        const row = rows[seq - 1] as TreeRow;
        const label = labels[row.id];
        return { node: label === undefined ? row : { ...row, label }, closes: closes[from + i] as number };
      });
    }
  }

  it("writes and links, from the shape alone, the tree buildTree links from the rows", async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { rows, labels } = randomRows(seed);
      const tree = buildTree(rows, labels);
      let text = "";
      for await (const part of treeJson(steps(rows, labels, 1 + (seed % 9)))) text += part;
      expect(text, `seed ${seed}`).toBe(`{"roots":${treeToJson(tree)}}`);
      expect(await treeFromSteps(steps(rows, labels, 5)), `seed ${seed}`).toEqual(tree);
    }
  });

  it("draws from the shape alone, node by node, the lines drawTree draws of the tree", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { rows, labels } = randomRows(seed);
      const tree = buildTree(rows, labels);
      const leafId = rows[seed % Math.max(1, rows.length)]?.id ?? null;
      const seqOf = new Map(rows.map((row, i) => [row.id, i + 1]));
      const shape = new TreeShape();
      shape.add(
        rows.map((row) => seqOf.get(row.id) as number),
        rows.map((row) => (row.parentId === null ? 0 : (seqOf.get(row.parentId) ?? 1_000_000))),
      );
      const { seqs, closes, places } = shape.order();
      const drawing = new TreeLines();
      const lines = Array.from(seqs, (seq, i) => {
        const row = rows[seq - 1] as TreeRow;
        const node = labels[row.id] === undefined ? row : { ...row, label: labels[row.id] };
        const line = drawing.line(places[i] as number, node, leafId);
        drawing.pass(places[i] as number, closes[i] as number);
        return line;
      });
      expect(lines, `seed ${seed}`).toEqual(drawTree(tree, leafId));
    }
  });

  it("cuts a long label in a tree's line, naming its length", () => {
    const node = {
      id: "e1",
      parentId: null,
      type: "message" as const,
      timestamp: "2026-01-01T00:00:00.000Z",
    };
    const [line] = drawTree([{ ...node, role: "user", label: "x".repeat(65_536), children: [] }], null);
    expect(line).toBe(`user e1 [${"x".repeat(200)}… (65536 characters)]`);
  });

  it("orders a chain of a million nodes without recursion", () => {
    const shape = new TreeShape();
    const seqs = Array.from({ length: 1_000_000 }, (_, i) => i + 1);
    shape.add(
      seqs,
      seqs.map((seq) => seq - 1),
    );
    const order = shape.order();
    expect(order.seqs.length).toBe(1_000_000);
    expect(order.seqs[999_999]).toBe(1_000_000);
    expect(order.closes[999_999]).toBe(1_000_000);
    expect(order.closes.subarray(0, 999_999).every((closes) => closes === 0)).toBe(true);
  });

  it("writes an empty tree as no roots", async () => {
    let text = "";
    for await (const part of treeJson(steps([], {}, 3))) text += part;
    expect(text).toBe('{"roots":[]}');
  });
});

describe("message schema", () => {
  it("keeps unknown roles and unknown fields exactly", () => {
    const message = { role: "bashExecution", command: "ls", nested: { z: 1, a: [true] } };
    const parsed = AgentMessage.parse(message);
    expect(parsed).toEqual(message);
    expect(JSON.stringify(parsed)).toBe(JSON.stringify(message));
  });

  it("reports a known role's bad field with its path", () => {
    const result = EntryInput.safeParse({
      type: "message",
      message: { role: "user", content: 5, timestamp: 1 },
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues.some((i) => i.path.join(".") === "message.content")).toBe(true);
  });
});

describe("hostile entries", () => {
  it("refuses deeply nested data with invalid_request instead of overflowing", async () => {
    const storage = MemoryStorage.create();
    const session = new Session(storage);
    let deep: unknown = {};
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    await expectCode(session.appendEntry({ type: "custom", customType: "x", data: deep }), "invalid_request");
    expect(await storage.getEntries()).toEqual([]);
  });

  it("stores __proto__ keys as plain data", async () => {
    const storage = MemoryStorage.create();
    const session = new Session(storage);
    const data = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": 1}}');
    const stored = await session.appendEntry({ type: "custom", customType: "x", data });
    const read = await storage.getEntry(stored.id);
    expect(JSON.stringify(read?.type === "custom" && read.data)).toBe(JSON.stringify(data));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("is a SessionError with a stable code", () => {
    const error = new SessionError("not_found", "gone", { id: "x" });
    expect(error.status).toBe(404);
    expect(error.toJSON()).toEqual({ code: "not_found", message: "gone", details: { id: "x" } });
  });
});

describe("the core's boundary", () => {
  it("imports nothing runtime-specific", () => {
    const dir = join(import.meta.dirname, "../../src/core");
    for (const file of readdirSync(dir, { recursive: true }) as string[]) {
      if (!file.endsWith(".ts")) continue;
      const source = readFileSync(join(dir, file), "utf8");
      expect(source, file).not.toMatch(/from\s+["'](node:|cloudflare:)/);
      expect(source, file).not.toMatch(/from\s+["'](fs|path|os|crypto)["']/);
    }
  });
});

describe("ids", () => {
  it("are UUIDv7 and sort in creation order, even within one millisecond", async () => {
    const { newId } = await import("../../src/core");
    const ids = Array.from({ length: 5000 }, () => newId());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids.slice(0, 10))
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
