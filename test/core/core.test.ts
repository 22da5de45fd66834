import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EntryInput } from "../../src/core/entries";
import { SessionError } from "../../src/core/errors";
import { canonicalJson } from "../../src/core/json";
import { MemoryStorage } from "../../src/core/memory";
import { AgentMessage } from "../../src/core/messages";
import { Session } from "../../src/core/session";
import type { TreeNode } from "../../src/core/tree";
import { buildTree, treeToJson } from "../../src/core/tree";
import { expectCode } from "../conformance/storage";

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
