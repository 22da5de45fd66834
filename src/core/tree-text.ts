import type { TreeNode, TreeNodeFields } from "./tree";
import { AMONG_SIBLINGS, LAST_SIBLING, type TreePlace } from "./tree-order";

/*
 * A session tree as lines of text, for a terminal and for a model. Branches indent; a chain of single children stays at one level
 * (agent sessions are mostly long chains), so a 100,000-entry chain is 100,000 lines, not a
 * staircase. Drawn without recursion: from the tree whole (`drawTree`), or node by node in the
 * order it is written from each node's place alone (`TreeLines`), so a window of a large tree's
 * lines is drawn reading only the nodes it shows.
 */

/** A label at most this long is shown whole; a longer one by its start and its length. */
export const MAX_TREE_LABEL_CHARS = 200;

function shownLabel(label: string): string {
  if (label.length <= MAX_TREE_LABEL_CHARS) return label;
  return `${label.slice(0, MAX_TREE_LABEL_CHARS)}… (${label.length} characters)`;
}

export function describe(node: TreeNodeFields, leafId: string | null): string {
  const kind = node.type === "message" ? (node.role ?? "message") : node.type;
  const marks = [
    node.label === undefined ? "" : ` [${shownLabel(node.label)}]`,
    node.id === leafId ? "  ← leaf" : "",
  ].join("");
  return `${kind} ${node.id}${marks}`;
}

/** What leads a node's line after the lines it hangs under: a branch's connector, or nothing in a chain. */
function connector(place: TreePlace): string {
  if (!(place & AMONG_SIBLINGS)) return "";
  return place & LAST_SIBLING ? "└─ " : "├─ ";
}

/** What a node's children's lines add to the lines it hangs under. */
function indent(place: TreePlace): string {
  if (!(place & AMONG_SIBLINGS)) return "";
  return place & LAST_SIBLING ? "   " : "│  ";
}

export function drawTree(roots: readonly TreeNode[], leafId: string | null): string[] {
  const lines: string[] = [];
  // Each frame: the siblings still to draw and the prefix their lines start with.
  const stack: Array<{ nodes: readonly TreeNode[]; index: number; prefix: string }> = [
    { nodes: roots, index: 0, prefix: "" },
  ];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as (typeof stack)[number];
    if (frame.index >= frame.nodes.length) {
      stack.pop();
      continue;
    }
    const node = frame.nodes[frame.index++] as TreeNode;
    const place =
      (frame.index === frame.nodes.length ? LAST_SIBLING : 0) | (frame.nodes.length > 1 ? AMONG_SIBLINGS : 0);
    lines.push(`${frame.prefix}${connector(place)}${describe(node, leafId)}`);
    if (node.children.length === 0) continue;
    stack.push({ nodes: node.children, index: 0, prefix: `${frame.prefix}${indent(place)}` });
  }
  return lines;
}

/**
 * A tree's lines drawn node by node in the order it is written (`TreeOrder`), from each node's
 * place among its siblings and the child lists that end after it. What it holds is the prefix
 * the next line hangs under and where each open node's part of it starts.
 */
export class TreeLines {
  #prefix = "";
  readonly #starts: number[] = [];

  /** The line of the next node, at `place`. */
  line(place: TreePlace, node: TreeNodeFields, leafId: string | null): string {
    return `${this.#prefix}${connector(place)}${describe(node, leafId)}`;
  }

  /** Moves past the next node, at `place`, after which `closes` child lists end (see `TreeStep`). */
  pass(place: TreePlace, closes: number): void {
    this.#starts.push(this.#prefix.length);
    this.#prefix += indent(place);
    if (closes === 0) return;
    const start = this.#starts[this.#starts.length - closes] as number;
    this.#starts.length -= closes;
    if (start < this.#prefix.length) this.#prefix = this.#prefix.slice(0, start);
  }
}
