import type { RemoteSession } from "../../client";
import type { StoredEntry } from "../../core/entries";
import { type EntrySummary, entrySummary } from "../../core/events";
import type { GenerationInfo } from "../../core/generations/generation-schemas";
import type { SessionInfo } from "../../core/session-schemas";
import { session } from "./api";
import { ago, count, fullTime, showConnection } from "./dom";
import { select, showNoEntry, updateEntryPane } from "./entry-pane";
import { clearError, showError } from "./error-bar";
import {
  answerInFlight,
  followGeneration,
  forgetInFlight,
  forgetWrittenAnswers,
  generationEnded,
  graftInto,
  ungraftFrom,
} from "./in-flight";
import { els } from "./page-elements";
import { renderSessions, updateListedSession } from "./session-list";
import { readSession, type SessionRead } from "./session-read";
import { clearSearch } from "./session-search";
import { hideTimeTravel, showTimeTravel } from "./time-travel";
import { applyChanges, fitsTree, type LabelChange, newLabelIds, type TreeChange } from "./tree-changes";
import { pathTo } from "./tree-rows";
import { loadDetails, rebuildRows, renderTree, scheduleRender, showsDetails } from "./tree-view";
import { resetView, view } from "./view-state";

/*
 * The open session: opening one, reading its tree, and following its events so a change made
 * anywhere shows at once. The tree is read whole when the session opens, and again only when its
 * events were cut off or one does not fit it; otherwise the entries and head moves the events
 * bring are added to it (tree-changes.ts), with the session's info read again, at most every
 * REFRESH_MS.
 */

/** Changes arriving together are shown together. */
const REFRESH_MS = 100;

let watching: AbortController | undefined;
/** The open session's events ended for good (a refused key, the session deleted): nothing follows it. */
let watchEnded = false;
let refreshTimer: ReturnType<typeof setTimeout> | undefined;
/** What the open session's events (and this page's own writes) said since the tree last took them. */
let changes: TreeChange[] = [];
/** Labels this page wrote, by their entries' ids: known without reading them. */
let writtenLabels = new Map<string, LabelChange>();
/** The events were cut off and follow again: the tree is read whole at the next refresh. */
let wholeTreeWanted = false;

/** Opens a session; with `reopen`, the one already open is opened afresh, its events followed again. */
export async function openSession(
  sessionId: string,
  entryId?: string | null,
  options: { reopen?: boolean } = {},
): Promise<void> {
  const switching = options.reopen === true || sessionId !== view.sessionId;
  const generation = ++view.generation;
  if (switching) {
    forgetInFlight();
    watchSession(sessionId);
    resetView(sessionId);
    els.tree.scrollTop = 0;
    els.sessionTitle.textContent = sessionId;
    els.sessionMeta.textContent = "Loading…";
    els.compactionNotice.hidden = true;
    delete els.tree.dataset.renderedSession;
    clearError();
    clearSearch();
    els.searchInput.disabled = false;
    hideTimeTravel();
    renderTree();
    showNoEntry();
    renderSessions();
  }
  try {
    const read = await readSession(sessionId);
    if (generation !== view.generation) return;
    applySession(read);
    // Events that came while the session was read are added to what it read.
    if (changes.length > 0) scheduleRefresh();
    const { info } = read;
    if (!view.renderedOnce.has(sessionId)) {
      view.renderedOnce.add(sessionId);
      // What `npm run bench` times: navigation start → this session's tree on screen.
      performance.mark("viewer:tree-rendered", {
        detail: { session: sessionId, rows: view.rows.length, entries: view.nodes.size },
      });
    }
    els.tree.dataset.renderedSession = sessionId;
    // Without an entry asked for, the head, or the answer being written under it.
    const head = info.leafId === null ? null : (answerInFlight(info.leafId) ?? info.leafId);
    select(entryId && view.nodes.has(entryId) ? entryId : head, { reveal: true });
    void loadDetails(generation);
    // Only a session that opened gets its slider, so a failed open shows one error: its own.
    if (switching) showTimeTravel(sessionId).catch(showError);
  } catch (error) {
    if (generation !== view.generation) return;
    els.sessionMeta.textContent = "";
    showError(error, `Could not open ${sessionId}`);
  }
}

/** Takes a fresh SessionInfo and tree; selection, open runs and scroll position stay. */
function applySession({ info, roots, nodes }: SessionRead): void {
  view.info = info;
  view.roots = roots;
  view.nodes = nodes;
  // Answers being written show under their parents until their entries are there.
  const written = forgetWrittenAnswers(info.id, view.nodes);
  graftInto(roots);
  view.path = pathTo(view.nodes, info.leafId);
  renderSessionHeader(info);
  rebuildRows();
  updateListedSession(info);
  if (view.selectedId && !view.nodes.has(view.selectedId)) showNoEntry();
  // A selected answer that became its entry shows the entry's context instead of its text.
  if (view.selectedId && written.includes(view.selectedId)) select(view.selectedId);
  else updateEntryPane();
}

function renderSessionHeader(info: SessionInfo): void {
  els.sessionTitle.textContent = info.name || info.id;
  const parts = [
    info.name ? info.id : null,
    count(info.entryCount, "entry", "entries"),
    count(info.messageCount, "message"),
    `updated ${ago(info.updatedAt)}`,
    info.parentSession ? `forked from ${info.parentSession.id} at ${info.parentSession.entryId}` : null,
  ];
  els.sessionMeta.textContent = parts.filter(Boolean).join(" · ");
  els.sessionMeta.title = `created ${fullTime(info.createdAt)}, updated ${fullTime(info.updatedAt)}`;
  // A compaction at the leaf leaves nothing to drop, whatever is kept.
  const leafIsCompaction = info.leafId !== null && view.nodes.get(info.leafId)?.type === "compaction";
  els.compactButton.disabled = !info.leafId || leafIsCompaction;
  els.compactButton.title = leafIsCompaction
    ? "The leaf is already a compaction: nothing to compact until the session goes on."
    : "Choose how much of the current branch to keep, and summarize the rest.";
}

/** The refresh being made, and the one asked for meanwhile: it runs once that one is done. */
let refreshing: Promise<void> | undefined;
let nextRefresh: { followLeaf: boolean; done: Promise<void> } | undefined;

/**
 * Fetches the session again. With followLeaf, a selection that was the leaf moves with it when
 * the leaf only went forward (an agent appending): watching a live session keeps showing its end.
 * One refresh runs at a time, so an older read never lands after a newer one; those asked for
 * while one runs are made together, once, after it.
 */
export function refreshSession(followLeaf = false): Promise<void> {
  if (nextRefresh) {
    nextRefresh.followLeaf ||= followLeaf;
    return nextRefresh.done;
  }
  if (!refreshing) return startRefresh(followLeaf);
  const next = { followLeaf, done: Promise.resolve() };
  next.done = refreshing
    .catch(() => undefined)
    .then(() => {
      nextRefresh = undefined;
      return startRefresh(next.followLeaf);
    });
  nextRefresh = next;
  return next.done;
}

function startRefresh(followLeaf: boolean): Promise<void> {
  const run = refreshNow(followLeaf).finally(() => {
    if (refreshing === run) refreshing = undefined;
  });
  refreshing = run;
  return run;
}

async function refreshNow(followLeaf: boolean): Promise<void> {
  const sessionId = view.sessionId;
  // Not open yet: opening reads the session, and what came meanwhile is applied after that.
  if (!sessionId || !view.info) return;
  const generation = view.generation;
  // The person watches the head when the selection is the leaf the last read showed.
  const watchedLeaf =
    followLeaf && view.selectedId !== null && view.selectedId === view.info.leafId ? view.selectedId : null;
  const taken = await readChanges(sessionId, generation).catch((error: unknown) => {
    // Another session was opened meanwhile: what failed is no longer on the page.
    if (generation === view.generation) throw error;
  });
  if (!taken || generation !== view.generation) return;
  const read = grownTree(taken);
  applySession(read);
  if (taken.read || taken.changes.some((change) => "entry" in change && showsDetails(change.entry.type)))
    void loadDetails(generation);
  // The head moved on from the entry watched, and the person did not select another meanwhile.
  const { leafId } = read.info;
  if (watchedLeaf && view.selectedId === watchedLeaf && leafId !== watchedLeaf && view.path.has(watchedLeaf))
    select(leafId, { reveal: true });
}

/** What a refresh takes: the changes, the labels they write, and the info and tree it read. */
interface TakenChanges {
  /** The whole session, when it was read again. */
  read?: SessionRead;
  info: SessionInfo;
  changes: TreeChange[];
  labels: Map<string, LabelChange>;
}

/**
 * The session's info read again and the changes since the last refresh, with the labels they
 * write. The whole session is read as well when its events ended or were cut off, or when a change
 * does not fit the tree; the changes are then applied to that read. Undefined when another session
 * (or the same one afresh) was opened meanwhile: the changes are that opening's.
 */
async function readChanges(sessionId: string, generation: number): Promise<TakenChanges | undefined> {
  const storage = session(sessionId);
  let whole = watchEnded || wholeTreeWanted;
  wholeTreeWanted = false;
  let taken: TreeChange[] = [];
  try {
    for (;;) {
      const read = whole ? await readSession(sessionId) : undefined;
      const info = read?.info ?? (await storage.getInfo());
      if (generation !== view.generation) return undefined;
      taken = [...taken, ...changes];
      changes = [];
      const labels = await readLabels(storage, newLabelIds(read?.nodes ?? view.nodes, taken));
      if (generation !== view.generation) return undefined;
      if (read || fitsTree(view.nodes, taken, labels)) return { read, info, changes: taken, labels };
      whole = true;
    }
  } catch (error) {
    // A failed read leaves what it took for the next one.
    if (generation === view.generation) {
      changes = [...taken, ...changes];
      wholeTreeWanted ||= whole;
    }
    throw error;
  }
}

/** The target and label of each label entry: written from this page, or read (its event has neither). */
async function readLabels(storage: RemoteSession, ids: readonly string[]): Promise<Map<string, LabelChange>> {
  const labels = new Map<string, LabelChange>();
  const read = await Promise.all(ids.map((id) => writtenLabels.get(id) ?? storage.getEntry(id)));
  read.forEach((entry, index) => {
    const id = ids[index] as string;
    writtenLabels.delete(id);
    if (entry && !("type" in entry)) labels.set(id, entry);
    else if (entry?.type === "label") labels.set(id, { targetId: entry.targetId, label: entry.label });
  });
  return labels;
}

/** The tree with the changes applied: the one read, or the one shown (its in-flight rows taken out first). */
function grownTree({ read, info, changes: taken, labels }: TakenChanges): SessionRead {
  if (!read) ungraftFrom(view.roots, view.nodes);
  const { roots, nodes } = read ?? view;
  const leafId = applyChanges(roots, nodes, taken, labels, (read?.info ?? view.info)?.leafId ?? null);
  return { info: { ...info, leafId }, roots, nodes };
}

/**
 * An entry this page wrote, taken as its event would be: the tree shows it at the next refresh
 * even before the event comes (which then changes nothing). Every write moves the head: a leaf
 * record to its target, an appended entry to itself.
 */
export function noteWritten(entry: StoredEntry): void {
  changes.push({ entry: entrySummary(entry) });
  if (entry.type === "label") writtenLabels.set(entry.id, { targetId: entry.targetId, label: entry.label });
  changes.push({ leafId: entry.type === "leaf" ? entry.targetId : entry.id });
}

/**
 * After a new key: a session that did not open, or whose events ended for good, is opened again;
 * one still followed is read again.
 */
export async function resumeSession(): Promise<void> {
  const sessionId = view.sessionId;
  if (!sessionId) return;
  if (watchEnded || !view.info) await openSession(sessionId, view.selectedId, { reopen: true });
  else await refreshSession();
}

/** Follows the open session's events until another one is opened. */
function watchSession(sessionId: string): void {
  watching?.abort();
  const stop = new AbortController();
  watching = stop;
  watchEnded = false;
  changes = [];
  writtenLabels = new Map();
  wholeTreeWanted = false;
  let cutOff = false;
  void (async () => {
    try {
      // The session's connection, as the top bar shows it. Live again after it was lost, the
      // tree is read whole: nothing missed meanwhile is left out.
      const onStatus = (status: "live" | "reconnecting" | "deleted") => {
        showConnection(els.liveStatus, status);
        if (status === "reconnecting") cutOff = true;
        if (status !== "live" || !cutOff) return;
        cutOff = false;
        wholeTreeWanted = true;
        scheduleRefresh();
      };
      for await (const event of session(sessionId).watch({ payload: false, signal: stop.signal, onStatus })) {
        if (view.sessionId !== sessionId) return;
        if (event.event === "deleted") {
          onStatus("deleted");
          return;
        }
        if (event.event === "generation") {
          if (event.data.state === "open")
            followGeneration(sessionId, event.data, {
              select,
              render: scheduleRender,
              ended: (info) => answerWritten(sessionId, info),
            });
          else answerWritten(sessionId, event.data);
        }
        // Watched without payloads: an entry event holds what a tree node does.
        if (event.event === "entry") changes.push({ entry: event.data as EntrySummary });
        if (event.event === "leaf") changes.push({ leafId: event.data.leafId });
        if (event.event === "entry" || event.event === "session" || event.event === "leaf") scheduleRefresh();
      }
    } catch (error) {
      // Before the session opened, opening it failed too and says so itself (openSession).
      if (!stop.signal.aborted && view.sessionId === sessionId && view.info) showError(error);
    } finally {
      if (watching === stop) watchEnded = true;
    }
  })();
}

/** The answer is an entry now: shown as one, its context in the pane when selected. */
function answerWritten(sessionId: string, info: GenerationInfo): void {
  generationEnded(sessionId, info);
  if (view.sessionId !== sessionId) return;
  refreshSession(true)
    .then(() => {
      if (view.sessionId === sessionId && view.selectedId === info.id) select(info.id);
    })
    .catch(showError);
}

function scheduleRefresh(): void {
  if (refreshTimer !== undefined) return;
  const sessionId = view.sessionId;
  refreshTimer = setTimeout(() => {
    refreshTimer = undefined;
    // The events were about the session then open; another one opened since reads itself.
    if (view.sessionId !== sessionId) return;
    refreshSession(true).catch(showError);
  }, REFRESH_MS);
}
