import type { TreeNode } from "../../core/tree";
import { formatNumber } from "./dom";

/*
 * The session tree flattened into rows for the virtual list. Indentation grows only where the
 * tree branches, so a long conversation stays one column; a chain of single-child entries with
 * nothing worth seeing becomes one collapsible "run" row. Everything here walks the tree without
 * recursion: a session may be a chain of 100,000 entries, far deeper than the call stack.
 */

/** One entry; `fork` marks the first entry of a branch. */
export interface NodeRow {
  kind: "node";
  node: TreeNode;
  depth: number;
  fork: boolean;
}

/** Entries hidden behind one row, keyed by the first of them; its node rows follow when expanded. */
export interface RunRow {
  kind: "run";
  key: string;
  nodes: TreeNode[];
  depth: number;
  expanded: boolean;
  /** What the run holds, computed when the row is first drawn. */
  description?: string;
}

export type Row = NodeRow | RunRow;

/** Entry types that change what a model is sent or how the session reads: never hidden in a run. */
const MARKED_TYPES: ReadonlySet<string> = new Set([
  "compaction",
  "branch_summary",
  "model_change",
  "thinking_level_change",
  "active_tools_change",
  "session_info",
  "context_edit",
]);

// Shorter runs are shown whole: a row that hides three entries saves nothing.
const RUN_MIN = 6;
// The last entries of a run stay visible: they lead into what follows (a branch point, the leaf).
const RUN_TAIL = 2;

export function indexTree(roots: readonly TreeNode[]): Map<string, TreeNode> {
  const nodes = new Map<string, TreeNode>();
  const stack = [...roots];
  for (let node = stack.pop(); node; node = stack.pop()) {
    nodes.set(node.id, node);
    for (const child of node.children) stack.push(child);
  }
  return nodes;
}

/** Ids on the path root → leaf: the branch a model is sent from. */
export function pathTo(nodes: ReadonlyMap<string, TreeNode>, leafId: string | null): Set<string> {
  const path = new Set<string>();
  let id = leafId;
  while (id) {
    const node = nodes.get(id);
    if (!node || path.has(id)) break;
    path.add(id);
    id = node.parentId;
  }
  return path;
}

/**
 * Rows in depth-first order, children in append order. An expanded run row is followed by its
 * node rows, then by the run's last RUN_TAIL entries. A run counts as expanded when its first
 * entry is in `expanded`, which holds every entry of each run the person opened, so a run that
 * later splits (a label lands inside it) stays open.
 */
export function flattenTree(
  roots: readonly TreeNode[],
  leafId: string | null,
  selectedId: string | null,
  expanded: ReadonlySet<string>,
): Row[] {
  const rows: Row[] = [];
  // The leaf is never hidden either, nor the selected entry: a collapsed run splits around it
  // (an entry opened from the address stays in view without opening 10,000 rows).
  const isMarked = (node: TreeNode) =>
    node.id === leafId ||
    node.label !== undefined ||
    MARKED_TYPES.has(node.type) ||
    (node.id === selectedId && !expanded.has(node.id));
  const stack = roots.map((node) => ({ node, depth: 0, fork: roots.length > 1 })).reverse();
  for (let start = stack.pop(); start; start = stack.pop()) {
    let plain: TreeNode[] = [];
    let node = start.node;
    let first = true;
    for (;;) {
      const shown = first || node.children.length !== 1 || isMarked(node);
      if (shown) {
        pushRun(rows, plain, start.depth, expanded);
        plain = [];
        rows.push({ kind: "node", node, depth: start.depth, fork: first && start.fork });
      } else plain.push(node);
      first = false;
      const [only] = node.children;
      if (node.children.length === 1 && only) {
        node = only;
        continue;
      }
      for (let i = node.children.length - 1; i >= 0; i--) {
        stack.push({ node: node.children[i] as TreeNode, depth: start.depth + 1, fork: true });
      }
      break;
    }
  }
  return rows;
}

function pushRun(rows: Row[], plain: TreeNode[], depth: number, expanded: ReadonlySet<string>): void {
  const [head] = plain;
  if (!head) return;
  if (plain.length < RUN_MIN) {
    for (const node of plain) rows.push({ kind: "node", node, depth, fork: false });
    return;
  }
  const hidden = plain.slice(0, plain.length - RUN_TAIL);
  const open = expanded.has(head.id);
  rows.push({ kind: "run", key: head.id, nodes: hidden, depth, expanded: open });
  if (open) for (const node of hidden) rows.push({ kind: "node", node, depth, fork: false });
  for (const node of plain.slice(hidden.length)) rows.push({ kind: "node", node, depth, fork: false });
}

/** "4,999 user · 4,999 assistant · 2 label": what a collapsed run holds. */
export function describeRun(nodes: readonly TreeNode[]): string {
  const counts = new Map<string, number>();
  for (const node of nodes) {
    const kind = node.type === "message" ? node.role || "message" : node.type;
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return Array.from(counts, ([kind, n]) => `${formatNumber(n)} ${kind}`).join(" · ");
}
