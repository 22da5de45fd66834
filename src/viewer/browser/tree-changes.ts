import type { EntrySummary } from "../../core/events";
import { nonBlank } from "../../core/info";
import type { TreeNode } from "../../core/tree";

/*
 * The tree kept current from the session's events: each entry event holds what a node holds (id,
 * parent, type, time, role), each leaf event where the head went. A label entry's target and
 * label are not in its event: they are read with the entry. Changes are applied in the order they
 * happened; one already in the tree (read with it, or written from this page) is skipped.
 */

export type TreeChange = { entry: EntrySummary } | { leafId: string | null };

/** What a label entry sets: its target's label, or none when absent. */
export interface LabelChange {
  targetId: string;
  label?: string;
}

/** Ids of the label entries among the changes that the tree does not hold yet. */
export function newLabelIds(nodes: ReadonlyMap<string, TreeNode>, changes: readonly TreeChange[]): string[] {
  return changes.flatMap((change) =>
    "entry" in change && change.entry.type === "label" && !nodes.has(change.entry.id)
      ? [change.entry.id]
      : [],
  );
}

/**
 * Whether every change fits the tree: each new entry's parent, each label's target and each leaf
 * are in it, or added by a change before. One that does not (missed while the page was not
 * following, or a label not read) asks for the whole tree.
 */
export function fitsTree(
  nodes: ReadonlyMap<string, TreeNode>,
  changes: readonly TreeChange[],
  labels: ReadonlyMap<string, LabelChange>,
): boolean {
  const added = new Set<string>();
  const known = (id: string) => nodes.has(id) || added.has(id);
  for (const change of changes) {
    if (!("entry" in change)) {
      if (change.leafId !== null && !known(change.leafId)) return false;
      continue;
    }
    const { entry } = change;
    if (entry.type === "leaf" || nodes.has(entry.id)) continue;
    if (entry.parentId !== null && !known(entry.parentId)) return false;
    if (entry.type === "label") {
      const label = labels.get(entry.id);
      if (!label || !known(label.targetId)) return false;
    }
    added.add(entry.id);
  }
  return true;
}

/**
 * Adds the changes' new entries to the tree in place (each under its parent, after the children
 * it has), sets the labels they write, and answers the leaf they leave (`leafId` when none moved
 * it). A change that does not fit the tree is skipped.
 */
export function applyChanges(
  roots: TreeNode[],
  nodes: Map<string, TreeNode>,
  changes: readonly TreeChange[],
  labels: ReadonlyMap<string, LabelChange>,
  leafId: string | null,
): string | null {
  let leaf = leafId;
  for (const change of changes) {
    if (!("entry" in change)) {
      if (change.leafId === null || nodes.has(change.leafId)) leaf = change.leafId;
      continue;
    }
    const { id, parentId, type, timestamp, role } = change.entry;
    if (type === "leaf" || nodes.has(id)) continue;
    const parent = parentId === null ? undefined : nodes.get(parentId);
    if (parentId !== null && !parent) continue;
    const node: TreeNode = {
      id,
      parentId,
      type,
      timestamp,
      ...(role === undefined ? {} : { role }),
      children: [],
    };
    if (parent) parent.children.push(node);
    else roots.push(node);
    nodes.set(id, node);
    const label = type === "label" ? labels.get(id) : undefined;
    const target = label && nodes.get(label.targetId);
    if (!label || !target) continue;
    const text = nonBlank(label.label);
    if (text === undefined) delete target.label;
    else target.label = text;
  }
  return leaf;
}
