import type { SessionInfo } from "../../core/session-schemas";
import type { TreeNode } from "../../core/tree";
import type { Row } from "./tree-rows";

/* What the page shows, in one place: the modules that draw it read and update these. */

/** The tenant's sessions, as far as the listing was paged. */
export const list = {
  sessions: [] as SessionInfo[],
  nextCursor: null as string | null,
};

/** What the page holds of one session, before anything of it was read. */
function sessionView(sessionId: string | null) {
  return {
    sessionId,
    info: null as SessionInfo | null,
    roots: [] as TreeNode[],
    nodes: new Map<string, TreeNode>(),
    /** Ids on the path root → leaf. */
    path: new Set<string>(),
    rows: [] as Row[],
    /** The row of each entry that has one. */
    rowIndex: new Map<string, number>(),
    /** Entries of the runs the person opened. */
    expanded: new Set<string>(),
    selectedId: null as string | null,
    /** The row the keyboard is on. */
    activeIndex: -1,
    /**
     * The latest context edit of each entry the details listing found, by the edited entry's id: its
     * row shows what it says and what the edit shows instead.
     */
    edits: new Map<string, { id: string; text: string }>(),
    /** One line about each entry whose row was drawn, by id. */
    previews: new Map<string, string>(),
    previewQueue: [] as string[],
    previewLoading: new Set<string>(),
    /** The seq of the last entry the detail listing returned. */
    detailsAfter: undefined as number | undefined,
  };
}

/** The open session: its tree, the rows drawn from it, the selection and what is being fetched. */
export const view = {
  ...sessionView(null),
  // Bumped whenever a session is opened: answers meant for an earlier view are dropped.
  generation: 0,
  contextRequest: 0,
  previewActive: 0,
  /** The time the slider went back to, and where the head stood then (null: now). */
  asOf: null as { at: string; leafId: string | null } | null,
  /** How far back the open session's leaf history goes (ms). */
  historyStartsAt: null as number | null,
  /** Sessions whose tree was drawn at least once since the page loaded. */
  renderedOnce: new Set<string>(),
};

/** Opens `sessionId` in the view: what was shown of the session before is forgotten. */
export function resetView(sessionId: string): void {
  Object.assign(view, sessionView(sessionId));
}
