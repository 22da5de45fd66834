/*
 * The session tree flattened into rows for the virtual list. Indentation grows only where the
 * tree branches, so a long conversation stays one column; a chain of single-child entries with
 * nothing worth seeing becomes one collapsible "run" row. Everything here walks the tree without
 * recursion: a session may be a chain of 100,000 entries, far deeper than the call stack.
 */

// biome-ignore lint/complexity/noUselessStringRaw: browser code, kept raw so a backslash added later reaches the page as written
export const treeRowsScript = String.raw`
/** Entry types that change what a model is sent or how the session reads: never hidden in a run. */
const MARKED_TYPES = new Set([
  "compaction",
  "branch_summary",
  "model_change",
  "thinking_level_change",
  "active_tools_change",
  "session_info",
]);

// Shorter runs are shown whole: a row that hides three entries saves nothing.
const RUN_MIN = 6;
// The last entries of a run stay visible: they lead into what follows (a branch point, the leaf).
const RUN_TAIL = 2;

function indexTree(roots) {
  const nodes = new Map();
  const stack = roots.slice();
  while (stack.length > 0) {
    const node = stack.pop();
    nodes.set(node.id, node);
    for (const child of node.children) stack.push(child);
  }
  return nodes;
}

/** Ids on the path root → leaf: the branch a model is sent from. */
function pathTo(nodes, leafId) {
  const path = new Set();
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
 * The leaf is never hidden either, nor the selected entry: a collapsed run splits around it
 * (an entry opened from the address stays in view without opening 10,000 rows).
 */
function isMarked(node, leafId, selectedId, expanded) {
  if (node.id === leafId || node.label !== undefined || MARKED_TYPES.has(node.type)) return true;
  return node.id === selectedId && !expanded.has(node.id);
}

/**
 * Rows in depth-first order, children in append order. A node row is {kind: "node", node,
 * depth, fork} (fork: the first entry of a branch); a run row is {kind: "run", key, nodes, depth,
 * expanded}, followed by its node rows when expanded, then by the run's last RUN_TAIL entries.
 * A run counts as expanded when its first entry is in expanded, which holds every entry of each
 * run the person opened, so a run that later splits (a label lands inside it) stays open.
 */
function flattenTree(roots, leafId, selectedId, expanded) {
  const rows = [];
  const stack = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push({ node: roots[i], depth: 0, fork: roots.length > 1 });
  while (stack.length > 0) {
    const start = stack.pop();
    let plain = [];
    let node = start.node;
    let first = true;
    for (;;) {
      const shown = first || node.children.length !== 1 || isMarked(node, leafId, selectedId, expanded);
      if (shown) {
        pushRun(rows, plain, start.depth, expanded);
        plain = [];
        rows.push({ kind: "node", node, depth: start.depth, fork: first && start.fork });
      } else {
        plain.push(node);
      }
      first = false;
      if (node.children.length === 1) {
        node = node.children[0];
        continue;
      }
      for (let i = node.children.length - 1; i >= 0; i--) {
        stack.push({ node: node.children[i], depth: start.depth + 1, fork: true });
      }
      break;
    }
  }
  return rows;
}

function pushRun(rows, plain, depth, expanded) {
  if (plain.length === 0) return;
  if (plain.length < RUN_MIN) {
    for (const node of plain) rows.push({ kind: "node", node, depth, fork: false });
    return;
  }
  const hidden = plain.slice(0, plain.length - RUN_TAIL);
  const open = expanded.has(hidden[0].id);
  rows.push({ kind: "run", key: hidden[0].id, nodes: hidden, depth, expanded: open });
  if (open) for (const node of hidden) rows.push({ kind: "node", node, depth, fork: false });
  for (const node of plain.slice(hidden.length)) rows.push({ kind: "node", node, depth, fork: false });
}

/** "4,999 user · 4,999 assistant · 2 label": what a collapsed run holds. */
function describeRun(nodes) {
  const counts = new Map();
  for (const node of nodes) {
    const kind = node.type === "message" ? node.role || "message" : node.type;
    counts.set(kind, (counts.get(kind) || 0) + 1);
  }
  return Array.from(counts, ([kind, n]) => numberFormat.format(n) + " " + kind).join(" · ");
}
`;
