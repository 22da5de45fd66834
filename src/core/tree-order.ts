/*
 * The order a tree is written in (its `TreeStep`s), worked out from its shape alone: each node's
 * seq and its parent's, a few integers a node, never the nodes themselves. Whoever holds the shape
 * can then read the nodes in that order a page at a time and write the tree as they come, so a
 * tree of a million nodes is never whole in memory. The order is `buildTree`'s: roots and the
 * children of each node in append order, and after them those whose parent was appended later
 * (imports may list a child first), or is unknown (a root).
 */

/** The nodes' seqs in the order they are written, and the child lists that end after each. */
export interface TreeOrder {
  seqs: Int32Array;
  closes: Int32Array;
  /** Each node's place among its siblings: `LAST_SIBLING` and `AMONG_SIBLINGS` (see `TreePlace`). */
  places: Uint8Array;
}

/** A node's place among its siblings, as bits: whether it ends its list, whether it has siblings. */
export type TreePlace = number;
/** The node is the last of its parent's children (or of the roots). */
export const LAST_SIBLING = 1;
/** The node has siblings: its parent's children (or the roots) branch. */
export const AMONG_SIBLINGS = 2;

const NONE = -1;

export class TreeShape {
  #seqs = new Int32Array(1024);
  #parents = new Int32Array(1024);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Nodes in append order (seqs rising): each one's seq, and its parent's (0: a root). */
  add(seqs: readonly number[], parents: readonly number[]): void {
    if (this.#size + seqs.length > this.#seqs.length) {
      const capacity = Math.max(this.#seqs.length * 2, this.#size + seqs.length);
      this.#seqs = grown(this.#seqs, capacity);
      this.#parents = grown(this.#parents, capacity);
    }
    for (let i = 0; i < seqs.length; i++) {
      const seq = seqs[i] as number;
      if (this.#size > 0 && seq <= (this.#seqs[this.#size - 1] as number)) {
        throw new Error("a tree's shape is added in append order");
      }
      this.#seqs[this.#size] = seq;
      this.#parents[this.#size] = parents[i] as number;
      this.#size++;
    }
  }

  /** The position of the node of `seq`, or NONE. */
  #find(seq: number): number {
    let low = 0;
    let high = this.#size - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const at = this.#seqs[mid] as number;
      if (at === seq) return mid;
      if (at < seq) low = mid + 1;
      else high = mid - 1;
    }
    return NONE;
  }

  /** Every node's place in the written tree, without recursion (a chain may be a million deep). */
  order(): TreeOrder {
    const size = this.#size;
    // Child lists as linked positions: each node's first and last child, and its next sibling.
    const first = new Int32Array(size + 1).fill(NONE);
    const last = new Int32Array(size + 1).fill(NONE);
    const next = new Int32Array(size).fill(NONE);
    // The roots' list is kept as the children of position `size`.
    const attach = (node: number, parent: number) => {
      if (first[parent] === NONE) first[parent] = node;
      else next[last[parent] as number] = node;
      last[parent] = node;
    };
    // First the roots and the children appended after their parent, then the rest, as buildTree.
    const parentAt = new Int32Array(size);
    for (let node = 0; node < size; node++) {
      const parentSeq = this.#parents[node] as number;
      const parent = parentSeq === 0 ? size : this.#find(parentSeq);
      parentAt[node] = parent;
      if (parent === size || (parent !== NONE && parent < node)) attach(node, parent);
    }
    for (let node = 0; node < size; node++) {
      const parent = parentAt[node] as number;
      if (parent === NONE) attach(node, size);
      else if (parent !== size && parent > node) attach(node, parent);
    }

    const seqs = new Int32Array(size);
    const closes = new Int32Array(size);
    const places = new Uint8Array(size);
    const open = new Int32Array(size);
    let depth = 0;
    let written = 0;
    let node = first[size] as number;
    // Whether `node` is the first of its list: alone in it when nothing follows it either.
    let opening = true;
    while (node !== NONE) {
      const last = next[node] === NONE;
      places[written] = (last ? LAST_SIBLING : 0) | (opening && last ? 0 : AMONG_SIBLINGS);
      seqs[written++] = this.#seqs[node] as number;
      if (first[node] !== NONE) {
        open[depth++] = node;
        node = first[node] as number;
        opening = true;
        continue;
      }
      // Its own empty list ends, then the lists of those it was the last descendant of.
      let ends = 1;
      while (next[node] === NONE && depth > 0) {
        node = open[--depth] as number;
        ends++;
      }
      closes[written - 1] = ends;
      node = next[node] as number;
      opening = false;
    }
    // A node that points at itself, or a cycle, is on no root's tree (no store writes one).
    return {
      seqs: seqs.subarray(0, written),
      closes: closes.subarray(0, written),
      places: places.subarray(0, written),
    };
  }
}

function grown(array: Int32Array, capacity: number): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(capacity);
  bigger.set(array);
  return bigger;
}
