import { addressOf } from "./address";
import { session } from "./api";
import { renderContext } from "./context-view";
import { fullTime, h } from "./dom";
import { kindName } from "./entry-text";
import { showError } from "./error-bar";
import { renderInFlight } from "./in-flight";
import { els } from "./page-elements";
import { rebuildRows, renderTree, type SelectOptions, scrollToRow } from "./tree-view";
import { view } from "./view-state";

/* The selected entry: its row, where it is, the actions on it, and the context a model is sent from it. */

// Arrow keys select as they move; only the entry the person stops on is fetched.
const CONTEXT_DEBOUNCE_MS = 150;

let contextTimer: ReturnType<typeof setTimeout> | undefined;

export function select(id: string | null, options: SelectOptions = {}): void {
  if (!id || !view.nodes.has(id)) {
    showNoEntry();
    return;
  }
  view.selectedId = id;
  // The selected entry is a row of its own even inside a collapsed run: the rows may change.
  rebuildRows();
  const index = view.rowIndex.get(id);
  if (index !== undefined) {
    view.activeIndex = index;
    if (options.reveal) scrollToRow(index, true);
  }
  history.replaceState(null, "", addressOf(view.sessionId, id));
  renderTree();
  updateEntryPane();
  clearTimeout(contextTimer);
  if (options.debounce) contextTimer = setTimeout(() => loadContext(id), CONTEXT_DEBOUNCE_MS);
  else void loadContext(id);
}

export function showNoEntry(): void {
  view.selectedId = null;
  els.entryTitle.textContent = "Context";
  if (!view.sessionId) els.entryMeta.textContent = "Pick a session on the left.";
  else if (!view.info) els.entryMeta.textContent = "Loading…";
  else
    els.entryMeta.textContent = view.info.leafId
      ? "Select an entry in the tree."
      : "This session has no entries yet.";
  els.entryActions.hidden = true;
  els.context.replaceChildren();
  delete els.context.dataset.contextFor;
}

/** The title, place and actions of the selected entry, after it or the session changed. */
export function updateEntryPane(): void {
  const node = view.selectedId ? view.nodes.get(view.selectedId) : undefined;
  if (!node || renderInFlight(node.id)) return;
  const isLeaf = node.id === view.info?.leafId;
  const where = isLeaf ? "the leaf" : view.path.has(node.id) ? "on the current branch" : "on another branch";
  const kind = node.type === "message" ? `${node.role ?? ""} message` : kindName(node.type);
  els.entryTitle.textContent = `Context at ${kind}`;
  els.entryMeta.textContent = [
    node.id,
    fullTime(node.timestamp),
    where,
    node.label ? `label “${node.label}”` : null,
  ]
    .filter(Boolean)
    .join(" · ");
  els.entryActions.hidden = false;
  els.moveLeafButton.disabled = isLeaf;
  els.labelClear.disabled = node.label === undefined;
  if (document.activeElement !== els.labelInput) els.labelInput.value = node.label ?? "";
}

async function loadContext(id: string): Promise<void> {
  const request = ++view.contextRequest;
  const sessionId = view.sessionId;
  // An answer being written has no context yet: its text is shown instead.
  if (!sessionId || renderInFlight(id)) return;
  els.context.setAttribute("aria-busy", "true");
  try {
    const context = await session(sessionId).buildContext({ leafId: id });
    if (request !== view.contextRequest) return;
    renderContext(els.context, context, id);
    els.context.scrollTop = els.context.scrollHeight;
  } catch (error) {
    if (request !== view.contextRequest) return;
    els.context.replaceChildren(h("p", { class: "muted", text: "The context could not be built." }));
    showError(error);
  } finally {
    if (request === view.contextRequest) els.context.removeAttribute("aria-busy");
  }
}
