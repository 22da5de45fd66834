import type { TreeNode } from "./tree";

/*
 * A session tree as lines of text, for a terminal and for a model. Branches indent; a chain of single children stays at one level
 * (agent sessions are mostly long chains), so a 100,000-entry chain is 100,000 lines, not a
 * staircase. Drawn without recursion.
 */

function describe(node: TreeNode, leafId: string | null): string {
  const kind = node.type === "message" ? (node.role ?? "message") : node.type;
  const marks = [
    node.label === undefined ? "" : ` [${node.label}]`,
    node.id === leafId ? "  ← leaf" : "",
  ].join("");
  return `${kind} ${node.id}${marks}`;
}

export function drawTree(roots: readonly TreeNode[], leafId: string | null): string[] {
  const lines: string[] = [];
  // Each frame: the siblings still to draw and the prefix their lines start with.
  const stack: Array<{ nodes: readonly TreeNode[]; index: number; prefix: string; branching: boolean }> = [
    { nodes: roots, index: 0, prefix: "", branching: roots.length > 1 },
  ];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as (typeof stack)[number];
    if (frame.index >= frame.nodes.length) {
      stack.pop();
      continue;
    }
    const node = frame.nodes[frame.index++] as TreeNode;
    const last = frame.index === frame.nodes.length;
    const connector = frame.branching ? (last ? "└─ " : "├─ ") : "";
    lines.push(`${frame.prefix}${connector}${describe(node, leafId)}`);
    if (node.children.length === 0) continue;
    const childPrefix = frame.branching ? `${frame.prefix}${last ? "   " : "│  "}` : frame.prefix;
    stack.push({ nodes: node.children, index: 0, prefix: childPrefix, branching: node.children.length > 1 });
  }
  return lines;
}
