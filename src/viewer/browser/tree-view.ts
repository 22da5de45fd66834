import { TREE_ROW_HEIGHT } from "../tree-row-height";
import { session } from "./api";
import { count, fullTime, h, shortTime } from "./dom";
import { describeEntry, editedText, kindName } from "./entry-text";
import { showError } from "./error-bar";
import { inFlightRow, rowText } from "./in-flight";
import { els } from "./page-elements";
import { describeRun, flattenTree, type NodeRow, type Row, type RunRow } from "./tree-rows";
import { view } from "./view-state";

/*
 * The tree as a virtual list: only the rows in view exist in the DOM, each at a fixed height,
 * and each drawn row fetches the one line it shows about its entry.
 */

const INDENT = 18;
// Rows drawn beyond the visible ones, so a scroll shows drawn rows before the next frame.
const OVERSCAN = 12;
const PREVIEW_FETCHES = 4;
// Small entries whose details the rows show, fetched in one listing instead of one by one.
const DETAIL_TYPES = [
  "model_change",
  "thinking_level_change",
  "active_tools_change",
  "session_info",
  "label",
  "context_edit",
  "usage",
] as const;
const DETAIL_TYPE_SET: ReadonlySet<string> = new Set(DETAIL_TYPES);

/** Whether entries of a type show details the listing reads (loadDetails), not a preview of their own. */
export function showsDetails(type: string): boolean {
  return DETAIL_TYPE_SET.has(type);
}
const DETAILS_PAGE = 1000;
const DETAILS_MAX_PAGES = 20;

export interface SelectOptions {
  /** Scroll the entry's row to the middle of the tree. */
  reveal?: boolean;
  /** Wait a moment before fetching the context: the keyboard may move on at once. */
  debounce?: boolean;
}

/** Rows again from the tree, after the tree, the leaf, the selection or an open run changed. */
export function rebuildRows(): void {
  view.rows = flattenTree(view.roots, view.info?.leafId ?? null, view.selectedId, view.expanded);
  view.rowIndex = new Map();
  view.rows.forEach((row, index) => {
    if (row.kind === "node") view.rowIndex.set(row.node.id, index);
  });
  const selected = view.selectedId ? view.rowIndex.get(view.selectedId) : undefined;
  if (selected !== undefined) view.activeIndex = selected;
  if (view.activeIndex >= view.rows.length) view.activeIndex = view.rows.length - 1;
  renderTree();
}

let renderPending = false;
export function scheduleRender(): void {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    renderTree();
  });
}

/** The rows in view of a tree `height` pixels high, plus OVERSCAN either side: [first, last). */
function rowsInView(height: number): [number, number] {
  const top = els.tree.scrollTop;
  const first = Math.max(0, Math.floor(top / TREE_ROW_HEIGHT) - OVERSCAN);
  return [first, Math.min(view.rows.length, Math.ceil((top + height) / TREE_ROW_HEIGHT) + OVERSCAN)];
}

/** Draws only the rows in view: the cost of a frame does not grow with the session. */
export function renderTree(): void {
  const total = view.rows.length;
  els.treeSpacer.style.height = `${total * TREE_ROW_HEIGHT}px`;
  const [first, last] = rowsInView(els.tree.clientHeight || 600);
  const fragment = document.createDocumentFragment();
  for (let i = first; i < last; i++) fragment.append(rowElement(view.rows[i] as Row, i));
  els.treeSpacer.replaceChildren(fragment);
  els.tree.dataset.rows = String(total);
  const active = view.rows[view.activeIndex];
  if (active && view.activeIndex >= first && view.activeIndex < last)
    els.tree.setAttribute("aria-activedescendant", rowDomId(active));
  else els.tree.removeAttribute("aria-activedescendant");
  requestPreviews(first, last);
}

function rowDomId(row: Row): string {
  return row.kind === "run" ? `run-${row.key}` : `row-${row.node.id}`;
}

function rowElement(row: Row, index: number): HTMLElement {
  const indent = h("span", { class: "indent", "aria-hidden": "true" });
  indent.style.width = `${row.depth * INDENT}px`;
  const el = row.kind === "run" ? runRowElement(row, indent) : nodeRowElement(row, indent);
  el.id = rowDomId(row);
  el.dataset.index = String(index);
  el.setAttribute("role", "treeitem");
  el.setAttribute("aria-level", String(row.depth + 1));
  el.style.top = `${index * TREE_ROW_HEIGHT}px`;
  el.style.backgroundSize = `${row.depth * INDENT}px 100%`;
  if (index === view.activeIndex) el.classList.add("active");
  return el;
}

function runRowElement(row: RunRow, indent: HTMLElement): HTMLElement {
  const onPath = view.path.has(row.key);
  row.description ??= describeRun(row.nodes);
  const entries = count(row.nodes.length, "entry", "entries");
  return h(
    "div",
    {
      class: `row run ${onPath ? "on-path" : "off-path"}`,
      "aria-expanded": row.expanded ? "true" : "false",
      "aria-selected": "false",
      "data-run": row.key,
      title: row.description,
    },
    [
      indent,
      h("button", {
        type: "button",
        tabindex: "-1",
        text: row.expanded ? "Collapse" : "Expand",
        "aria-label": `${row.expanded ? "Collapse" : "Expand"} ${entries}`,
      }),
      h("span", { class: "text", text: `${row.expanded ? "▾" : "⋯"} ${entries} · ${row.description}` }),
    ],
  );
}

/** An answer being written: its text so far, growing, and a Stop button. */
function inFlightRowElement(row: NodeRow, indent: HTMLElement): HTMLElement | undefined {
  const flight = inFlightRow(row.node.id);
  if (!flight) return undefined;
  const node = row.node;
  return h(
    "div",
    {
      class: "row in-flight-row on-path",
      "aria-selected": node.id === view.selectedId ? "true" : "false",
      "aria-busy": "true",
      "data-id": node.id,
      "data-generation": node.id,
      title: `${node.id} · being written since ${fullTime(node.timestamp)}`,
    },
    [
      indent,
      h("span", { class: "fork", "aria-hidden": "true", text: row.fork ? "↳" : "" }),
      h("span", { class: "kind", text: "assistant" }),
      h("span", { class: "badge writing-badge", text: "writing…" }),
      h("span", { class: "text", text: rowText(flight) }),
      h("button", {
        type: "button",
        tabindex: "-1",
        class: "stop-generation",
        text: "Stop",
        "data-stop": node.id,
        "aria-label": "Stop this answer",
      }),
    ],
  );
}

function nodeRowElement(row: NodeRow, indent: HTMLElement): HTMLElement {
  const flight = inFlightRowElement(row, indent);
  if (flight) return flight;
  const node = row.node;
  const isLeaf = node.id === view.info?.leafId;
  const wasLeaf = view.asOf !== null && node.id === view.asOf.leafId;
  const classes = ["row", view.path.has(node.id) ? "on-path" : "off-path"];
  if (isLeaf) classes.push("leaf");
  if (node.type === "message" && node.role) classes.push(`role-${node.role}`);
  const kind =
    node.type === "message"
      ? h("span", {
          class: "kind",
          text: node.role === "toolResult" ? "tool result" : node.role || "message",
        })
      : h("span", { class: `mark mark-${node.type}`, text: kindName(node.type) });
  const preview = view.previews.get(node.id);
  // An edited entry shows what it says and, beside it, what the latest edit of it shows instead.
  const edit = view.edits.get(node.id);
  return h(
    "div",
    {
      class: classes.join(" "),
      "aria-selected": node.id === view.selectedId ? "true" : "false",
      "data-id": node.id,
      "data-type": node.type,
      title: `${node.id} · ${fullTime(node.timestamp)}`,
    },
    [
      indent,
      h("span", { class: "fork", "aria-hidden": "true", text: row.fork ? "↳" : "" }),
      kind,
      h("span", { class: "text", text: preview ? preview.replace(/\s+/g, " ").slice(0, 300) : "" }),
      edit
        ? h("span", {
            class: "badge edited-chip",
            text: "edited",
            title: `context edit ${edit.id}: ${edit.text}`,
            "aria-label": `edited by ${edit.id}: ${edit.text}`,
          })
        : null,
      node.label !== undefined
        ? h("span", { class: "badge label-chip", text: node.label, "aria-label": `label ${node.label}` })
        : null,
      node.children.length > 1
        ? h("span", { class: "branches", text: `${node.children.length} branches` })
        : null,
      isLeaf ? h("span", { class: "badge leaf-badge", text: "leaf" }) : null,
      wasLeaf
        ? h("span", {
            class: "badge then-badge",
            text: "then",
            title: `the head as of ${fullTime((view.asOf as { at: string }).at)}`,
          })
        : null,
      h("span", { class: "time", text: shortTime(node.timestamp) }),
    ],
  );
}

/** Details of model, thinking, tools, name and label entries, in one listing, only new ones. */
export async function loadDetails(generation: number): Promise<void> {
  const sessionId = view.sessionId;
  if (!sessionId) return;
  for (let page = 0; page < DETAILS_MAX_PAGES; page++) {
    const entries = await session(sessionId)
      .getEntries({ after: view.detailsAfter, limit: DETAILS_PAGE, type: [...DETAIL_TYPES] })
      .catch((error: unknown) => {
        if (generation === view.generation) showError(error);
      });
    if (!entries || generation !== view.generation) return;
    for (const entry of entries) {
      view.previews.set(entry.id, describeEntry(entry));
      if (entry.type === "context_edit")
        view.edits.set(entry.targetId, { id: entry.id, text: editedText(entry) });
      view.detailsAfter = entry.seq;
    }
    if (entries.length < DETAILS_PAGE) break;
  }
  scheduleRender();
}

// Entry payloads are not in the tree: rows in view fetch theirs, a few at a time.
function requestPreviews(first: number, last: number): void {
  for (let i = first; i < last; i++) {
    const row = view.rows[i];
    if (row?.kind !== "node") continue;
    const id = row.node.id;
    if (view.previews.has(id) || view.previewLoading.has(id)) continue;
    if (DETAIL_TYPE_SET.has(row.node.type) || inFlightRow(id)) continue;
    view.previewLoading.add(id);
    view.previewQueue.push(id);
  }
  pumpPreviews();
}

function pumpPreviews(): void {
  const sessionId = view.sessionId;
  if (!sessionId) return;
  const [first, last] = rowsInView(els.tree.clientHeight);
  while (view.previewActive < PREVIEW_FETCHES) {
    const id = view.previewQueue.shift();
    if (id === undefined) return;
    // Scrolled out of view while it waited: fetched again if it comes back.
    const index = view.rowIndex.get(id);
    if (index === undefined || index < first || index >= last) {
      view.previewLoading.delete(id);
      continue;
    }
    view.previewActive++;
    const previews = view.previews;
    session(sessionId)
      .getEntry(id)
      .then((entry) => previews.set(id, entry ? describeEntry(entry) : ""))
      // A row without its preview still shows its kind and time; the tree itself is what matters.
      .catch(() => previews.set(id, ""))
      .finally(() => {
        view.previewActive--;
        view.previewLoading.delete(id);
        if (previews === view.previews) scheduleRender();
        pumpPreviews();
      });
  }
}

export function scrollToRow(index: number, center: boolean): void {
  const tree = els.tree;
  const top = index * TREE_ROW_HEIGHT;
  if (center) tree.scrollTop = Math.max(0, top - (tree.clientHeight - TREE_ROW_HEIGHT) / 2);
  else if (top < tree.scrollTop) tree.scrollTop = top;
  else if (top + TREE_ROW_HEIGHT > tree.scrollTop + tree.clientHeight)
    tree.scrollTop = top + TREE_ROW_HEIGHT - tree.clientHeight;
}

function toggleRun(row: RunRow): void {
  if (row.expanded) for (const node of row.nodes) view.expanded.delete(node.id);
  else for (const node of row.nodes) view.expanded.add(node.id);
  rebuildRows();
}

/** The row a key moves the keyboard to, or undefined when the key is not for moving. */
function rowAfterKey(key: string, index: number): number | undefined {
  const lastRow = view.rows.length - 1;
  const page = Math.floor(els.tree.clientHeight / TREE_ROW_HEIGHT);
  const moves: Record<string, number> = {
    ArrowDown: index + 1,
    ArrowUp: index - 1,
    Home: 0,
    End: lastRow,
    PageDown: index + page,
    PageUp: index - page,
  };
  return Object.hasOwn(moves, key) ? Math.max(0, Math.min(lastRow, moves[key] as number)) : undefined;
}

/** Clicks, the keyboard and scrolling on the tree; selecting an entry is the caller's. */
export function installTreeEvents(select: (id: string, options?: SelectOptions) => void): void {
  els.tree.addEventListener("scroll", scheduleRender, { passive: true });
  window.addEventListener("resize", scheduleRender);

  els.tree.addEventListener("click", (event) => {
    const el = event.target instanceof Element ? event.target.closest<HTMLElement>(".row") : null;
    if (!el) return;
    const index = Number(el.dataset.index);
    const row = view.rows[index];
    if (!row) return;
    view.activeIndex = index;
    if (row.kind === "run") toggleRun(row);
    else select(row.node.id);
    els.tree.focus({ preventScroll: true });
  });

  els.tree.addEventListener("keydown", (event) => {
    if (view.rows.length === 0) return;
    const index =
      view.activeIndex < 0
        ? ((view.selectedId ? view.rowIndex.get(view.selectedId) : undefined) ?? 0)
        : view.activeIndex;
    const row = view.rows[index];
    const key = event.key;
    if (key === "ArrowRight" || key === "ArrowLeft" || key === "Enter" || key === " ") {
      if (row?.kind === "run") {
        if (key === "Enter" || key === " " || (key === "ArrowRight") !== row.expanded) toggleRun(row);
        event.preventDefault();
      }
      return;
    }
    const next = rowAfterKey(key, index);
    if (next === undefined) return;
    event.preventDefault();
    view.activeIndex = next;
    scrollToRow(next, false);
    const target = view.rows[next];
    if (target?.kind === "node") select(target.node.id, { debounce: true });
    else renderTree();
  });
}
