import type { GenerationInfo } from "../../core/generations/generation-schemas";
import type { TreeNode } from "../../core/tree";
import { session } from "./api";
import { fullTime, h } from "./dom";
import { clearError, showError } from "./error-bar";
import { els } from "./page-elements";
import { view } from "./view-state";

/*
 * Answers being written in the open session (its generations): each followed from its stream and
 * shown as it grows, a row under its parent in the tree, and whole in the context pane when
 * selected, with a Stop button. What was read is kept in the tab's sessionStorage (text and
 * offset), so after a reload it goes on from there: nothing read twice, nothing missed. Its row
 * takes the generation's id, which its entry takes too: once written, the entry stands in its place.
 */

interface InFlight {
  info: GenerationInfo;
  text: string;
  offset: string;
  stop: AbortController;
}

/** Characters of the text a row shows: its end, where the words are coming. */
const ROW_CHARS = 300;

const inFlight = new Map<string, InFlight>();
/** In-flight answers drawn as rows of their own: their entries are not in the tree yet. */
const grafted = new Set<string>();

function storageKey(sessionId: string, generationId: string): string {
  return `cf-sessions:generation:${sessionId}:${generationId}`;
}

/**
 * Uses the tab's sessionStorage, if it can be: storage that cannot be read or is full (a private
 * window's quota) only means a reload reads the answer from its start, which shows the same.
 */
function withStorage<T>(use: (storage: Storage) => T): T | undefined {
  try {
    return use(sessionStorage);
  } catch {
    return undefined;
  }
}

/** What an earlier page of this tab read of the answer, if anything. */
function readProgress(sessionId: string, generationId: string): { text: string; offset: string } | undefined {
  const key = storageKey(sessionId, generationId);
  const saved = withStorage(
    (storage) => JSON.parse(storage.getItem(key) ?? "null") as { text?: unknown; offset?: unknown } | null,
  );
  if (typeof saved?.text === "string" && typeof saved.offset === "string")
    return { text: saved.text, offset: saved.offset };
  return undefined;
}

function saveProgress(sessionId: string, flight: InFlight): void {
  const progress = JSON.stringify({ text: flight.text, offset: flight.offset });
  withStorage((storage) => storage.setItem(storageKey(sessionId, flight.info.id), progress));
}

function forgetProgress(sessionId: string, generationId: string): void {
  withStorage((storage) => storage.removeItem(storageKey(sessionId, generationId)));
}

/** The in-flight answer a row stands for, when the row is one (not yet an entry). */
export function inFlightRow(id: string): InFlight | undefined {
  return grafted.has(id) ? inFlight.get(id) : undefined;
}

/**
 * Follows an answer of the open session as it is written (once; from where this tab last was).
 * Watching the head, or the entry it answers, the answer is selected as it starts. `hooks` select
 * its row, draw the tree again, and are told when its stream closed: the session's events may not
 * say so (the answer ended while they were cut off, and a reconnect announces only open ones).
 */
export function followGeneration(
  sessionId: string,
  info: GenerationInfo,
  hooks: { select(id: string): void; render(): void; ended(info: GenerationInfo): void },
): void {
  if (inFlight.has(info.id) || info.state !== "open") return;
  const saved = readProgress(sessionId, info.id);
  const flight: InFlight = {
    info,
    text: saved?.text ?? "",
    offset: saved?.offset ?? "-1",
    stop: new AbortController(),
  };
  inFlight.set(info.id, flight);
  // Watching the entry it answers (the head, usually), one follows the answer.
  const followHead = view.selectedId !== null && view.selectedId === info.parentId;
  graftInto(view.roots);
  hooks.render();
  if (followHead && view.nodes.has(info.id)) hooks.select(info.id);
  void (async () => {
    try {
      for await (const chunk of session(sessionId).follow(info, {
        offset: flight.offset,
        signal: flight.stop.signal,
      })) {
        flight.text += chunk.text;
        flight.offset = chunk.offset;
        saveProgress(sessionId, flight);
        hooks.render();
        if (view.selectedId === info.id) renderInFlight(info.id);
      }
      if (!flight.stop.signal.aborted) hooks.ended(info);
    } catch (error) {
      if (!flight.stop.signal.aborted && view.sessionId === sessionId)
        showError(error, "Following an answer");
    }
  })();
}

/**
 * The answer is written (finished or stopped): nothing more of it is read. Its row stays until its
 * entry is in the tree (the session's events bring it), which then takes its place.
 */
export function generationEnded(sessionId: string, info: GenerationInfo): void {
  inFlight.get(info.id)?.stop.abort();
  forgetProgress(sessionId, info.id);
}

/**
 * Answers whose entries the tree (without in-flight rows) holds are written: nothing of them is
 * followed or drawn any more. Answers the ids it forgot.
 */
export function forgetWrittenAnswers(sessionId: string, nodes: ReadonlyMap<string, TreeNode>): string[] {
  const written = [...inFlight.values()].filter(({ info }) => nodes.has(info.id)).map(({ info }) => info);
  for (const info of written) {
    generationEnded(sessionId, info);
    inFlight.delete(info.id);
  }
  return written.map((info) => info.id);
}

/** The latest answer being written under an entry, if any: what watching that entry shows next. */
export function answerInFlight(parentId: string | null): string | undefined {
  let latest: string | undefined;
  for (const { info } of inFlight.values())
    if (info.parentId === parentId && grafted.has(info.id)) latest = info.id;
  return latest;
}

/** Another session is opened: nothing of this one is followed any more. */
export function forgetInFlight(): void {
  for (const flight of inFlight.values()) flight.stop.abort();
  inFlight.clear();
  grafted.clear();
}

/**
 * Adds a node for each answer in flight whose entry is not in the tree yet, under its parent (a
 * root when it answers nothing), and indexes it.
 */
export function graftInto(roots: TreeNode[]): void {
  const before = new Set(grafted);
  grafted.clear();
  for (const { info } of inFlight.values()) {
    // A node from an earlier graft stays; an entry already written is the row itself.
    if (view.nodes.has(info.id)) {
      if (before.has(info.id)) grafted.add(info.id);
      continue;
    }
    const node: TreeNode = {
      id: info.id,
      parentId: info.parentId,
      type: "message",
      role: "assistant",
      timestamp: info.openedAt,
      children: [],
    } as TreeNode;
    const parent = info.parentId === null ? undefined : view.nodes.get(info.parentId);
    if (info.parentId !== null && !parent) continue;
    if (parent) parent.children = [...parent.children.filter((child) => child.id !== info.id), node];
    else roots.push(node);
    view.nodes.set(info.id, node);
    grafted.add(info.id);
  }
}

/**
 * Takes the rows of answers in flight out of the tree, before entries are added to it: graftInto
 * adds back those still being written whose entries did not come.
 */
export function ungraftFrom(roots: TreeNode[], nodes: Map<string, TreeNode>): void {
  for (const id of grafted) {
    const node = nodes.get(id);
    if (!node) continue;
    const parent = node.parentId === null ? undefined : nodes.get(node.parentId);
    if (parent) parent.children = parent.children.filter((child) => child !== node);
    else if (roots.includes(node)) roots.splice(roots.indexOf(node), 1);
    nodes.delete(id);
  }
  grafted.clear();
}

/** The text of an in-flight answer, whole, with its Stop button (the context pane, when it is selected). */
export function renderInFlight(id: string): boolean {
  const flight = inFlightRow(id);
  if (!flight) return false;
  const { info } = flight;
  els.entryTitle.textContent = "Answer being written";
  els.entryMeta.textContent = [info.id, `started ${fullTime(info.openedAt)}`, info.format].join(" · ");
  els.entryActions.hidden = true;
  els.context.replaceChildren(
    h("div", { class: "in-flight", "data-generation": info.id, "data-offset": flight.offset }, [
      h("div", { class: "in-flight-text text-part", text: flight.text }),
      h("p", { class: "muted", text: "Writing… (it becomes an entry once it is complete or stopped)" }),
      h("button", { type: "button", class: "stop-generation", text: "Stop", "data-stop": info.id }),
    ]),
  );
  els.context.dataset.contextFor = info.id;
  els.context.scrollTop = els.context.scrollHeight;
  return true;
}

/** What an in-flight row shows of its answer: the end of its text. */
export function rowText(flight: InFlight): string {
  const text = flight.text.replace(/\s+/g, " ");
  return text.length > ROW_CHARS ? `…${text.slice(-ROW_CHARS)}` : text || "…";
}

/** Stop buttons, on rows and in the context pane: any key that may write the session may stop one. */
export function installStopButtons(): void {
  const stop = (event: Event) => {
    const button =
      event.target instanceof Element ? event.target.closest<HTMLButtonElement>("[data-stop]") : null;
    if (!button) return;
    event.stopPropagation();
    const sessionId = view.sessionId;
    const id = button.dataset.stop;
    if (!sessionId || !id) return;
    button.disabled = true;
    clearError();
    session(sessionId)
      .stopGeneration(id)
      .catch((error: unknown) => {
        button.disabled = false;
        showError(error, "Stopping the answer");
      });
  };
  // Before the tree's own click handler, which would select the row.
  els.tree.addEventListener("click", stop, { capture: true });
  els.context.addEventListener("click", stop);
}
