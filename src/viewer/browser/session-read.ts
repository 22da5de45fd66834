import type { SessionInfo } from "../../core/session-schemas";
import type { TreeNode } from "../../core/tree";
import { session } from "./api";
import { indexTree } from "./tree-rows";

/*
 * A session as the page reads it: its info and its tree, two requests made side by side. An append
 * between them leaves an info whose leaf the tree does not hold yet, a branch the page cannot draw;
 * such a pair is read again.
 */

/** Reads made in all before a pair whose leaf is missing is taken as it is (the tree may have lost it). */
const MAX_READS = 3;

export interface SessionRead {
  info: SessionInfo;
  roots: TreeNode[];
  /** The tree's nodes by id. */
  nodes: Map<string, TreeNode>;
}

/** The session's info and tree, the info's leaf in the tree. */
export async function readSession(sessionId: string): Promise<SessionRead> {
  const storage = session(sessionId);
  for (let reads = 1; ; reads++) {
    const [info, roots] = await Promise.all([storage.getInfo(), storage.getTree()]);
    const nodes = indexTree(roots);
    if (info.leafId === null || nodes.has(info.leafId) || reads >= MAX_READS) return { info, roots, nodes };
  }
}
