import * as z from "zod";
import type { EntryType, TreeEntry } from "./entries";
import { EntryType as EntryTypeSchema, Id, Timestamp } from "./entries";

/** A node of `getTree`: the shape of the session without payloads. */
export interface TreeNode {
  id: string;
  parentId: string | null;
  type: Exclude<EntryType, "leaf">;
  timestamp: string;
  role?: string;
  label?: string;
  children: TreeNode[];
}

export const TreeNode: z.ZodType<TreeNode> = z
  .object({
    id: Id,
    parentId: Id.nullable(),
    type: EntryTypeSchema.exclude(["leaf"]),
    timestamp: Timestamp,
    role: z.string().optional(),
    label: z.string().optional(),
    get children() {
      return z.array(TreeNode);
    },
  })
  .meta({ id: "TreeNode" });

/** What `buildTree` needs of an entry: no payload but the message role. */
export type TreeRow = Omit<TreeNode, "label" | "children">;

/** A node without its children: an entry's row and its label. */
export type TreeNodeFields = Omit<TreeNode, "children">;

/**
 * A node in the order a tree is written (parents before children, siblings in order), with the
 * child lists that end after it: its own when it has no children (its first child follows it
 * otherwise), and then those of the ancestors whose last descendant it is.
 */
export interface TreeStep {
  node: TreeNodeFields;
  closes: number;
}

export function treeRow(entry: TreeEntry): TreeRow {
  const { id, parentId, type, timestamp } = entry;
  return { id, parentId, type, timestamp, ...(type === "message" ? { role: entry.message.role } : {}) };
}

/**
 * Links rows (in append order) into trees without recursion, so a chain of any depth works.
 * Children keep append order. A row whose parent is unknown becomes a root.
 */
export function buildTree(rows: Iterable<TreeRow>, labels: Readonly<Record<string, string>>): TreeNode[] {
  const nodes = new Map<string, TreeNode>();
  const roots: TreeNode[] = [];
  const orphans: Array<[TreeNode, string]> = [];
  for (const row of rows) {
    const label = Object.hasOwn(labels, row.id) ? labels[row.id] : undefined;
    const node: TreeNode = {
      id: row.id,
      parentId: row.parentId,
      type: row.type,
      timestamp: row.timestamp,
      ...(row.role === undefined ? {} : { role: row.role }),
      ...(label === undefined ? {} : { label }),
      children: [],
    };
    nodes.set(row.id, node);
    if (row.parentId === null) roots.push(node);
    else {
      const parent = nodes.get(row.parentId);
      if (parent) parent.children.push(node);
      else orphans.push([node, row.parentId]);
    }
  }
  // Imports may list a child before its parent; attach those once every node is known.
  for (const [node, parentId] of orphans) {
    const parent = nodes.get(parentId);
    if (parent) parent.children.push(node);
    else roots.push(node);
  }
  return roots;
}

/** Every node, parents before children, without recursion. */
export function* walkTree(roots: readonly TreeNode[]): Generator<TreeNode> {
  const stack = [...roots].reverse();
  while (stack.length > 0) {
    const node = stack.pop() as TreeNode;
    yield node;
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i] as TreeNode);
  }
}

/** Links a tree's steps, page by page, into its roots (what `buildTree` makes of its rows). */
export async function treeFromSteps(pages: AsyncIterable<readonly TreeStep[]>): Promise<TreeNode[]> {
  const roots: TreeNode[] = [];
  // The nodes whose child lists are still open, innermost last.
  const open: TreeNode[] = [];
  for await (const page of pages) {
    for (const { node: fields, closes } of page) {
      const node: TreeNode = { ...fields, children: [] };
      (open[open.length - 1]?.children ?? roots).push(node);
      open.push(node);
      open.length -= closes;
    }
  }
  return roots;
}

/** A node's JSON up to its children: `{…its fields,"children":[`. */
export function nodeOpening(fields: TreeNodeFields): string {
  const head = JSON.stringify(fields);
  return `${head.slice(0, -1)},"children":[`;
}

/**
 * JSON for a tree of any depth. `JSON.stringify` recurses once per level and overflows the stack
 * on long chains; this writes the same text with an explicit stack.
 */
export function treeToJson(roots: readonly TreeNode[]): string {
  const out: string[] = ["["];
  type Frame = { nodes: readonly TreeNode[]; next: number };
  const stack: Frame[] = [{ nodes: roots, next: 0 }];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.next >= frame.nodes.length) {
      stack.pop();
      out.push(stack.length > 0 ? "]}" : "]");
      continue;
    }
    if (frame.next > 0) out.push(",");
    const node = frame.nodes[frame.next++] as TreeNode;
    const { children, ...fields } = node;
    out.push(nodeOpening(fields));
    stack.push({ nodes: children, next: 0 });
  }
  return out.join("");
}
