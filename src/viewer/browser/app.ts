import { TREE_ROW_HEIGHT } from "../style";

/*
 * The page itself: the session list, the tree as a virtual list (only the rows in view exist in
 * the DOM, each at a fixed height), the context of the selected entry, the actions, and the
 * 2-second poll that refreshes the tree when the session changed. The address keeps the session
 * and entry (#session=…&entry=…), so a view can be linked and reloaded.
 */

export const appScript = String.raw`
const ROW_HEIGHT = ${TREE_ROW_HEIGHT};
const INDENT = 18;
// Rows drawn beyond the visible ones, so a scroll shows drawn rows before the next frame.
const OVERSCAN = 12;
const POLL_MS = 2000;
const PREVIEW_FETCHES = 4;
// Small entries whose details the rows show, fetched in one listing instead of one by one.
const DETAIL_TYPES = "model_change,thinking_level_change,active_tools_change,session_info,label";
const DETAIL_TYPE_SET = new Set(DETAIL_TYPES.split(","));

const els = {};
for (const id of [
  "error", "error-text", "error-dismiss", "token-button", "sessions-refresh", "session-filter", "session-list",
  "sessions-empty", "sessions-more", "session-title", "session-meta", "compact-button", "compaction-notice",
  "tree", "tree-spacer", "entry-title", "entry-meta", "entry-actions", "move-leaf-button", "fork-button",
  "label-form", "label-input", "label-clear", "context",
]) {
  els[id.replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
}

const list = { sessions: [], nextCursor: null };

const view = {
  sessionId: null,
  info: null,
  roots: [],
  nodes: new Map(),
  path: new Set(),
  rows: [],
  rowIndex: new Map(),
  expanded: new Set(),
  selectedId: null,
  activeIndex: -1,
  // Bumped whenever a session is opened: answers meant for an earlier view are dropped.
  generation: 0,
  contextRequest: 0,
  polling: false,
  previews: new Map(),
  previewQueue: [],
  previewLoading: new Set(),
  previewActive: 0,
  detailsAfter: undefined,
  renderedOnce: new Set(),
};

/** Shows a failure in words; doing says what was being attempted when that is not obvious. */
function showError(error, doing) {
  const text = error instanceof ApiError ? error.describe() : "error: " + (error && error.message ? error.message : String(error));
  els.errorText.textContent = doing ? doing + ": " + text : text;
  els.error.hidden = false;
}

function clearError() {
  els.error.hidden = true;
  els.errorText.textContent = "";
}

/** Runs an action from a button: the button waits, and a failure is shown in words. */
async function act(button, action) {
  if (button) button.disabled = true;
  try {
    clearError();
    await action();
  } catch (error) {
    showError(error);
  } finally {
    if (button) button.disabled = false;
    updateEntryPane();
  }
}


function readAddress() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { session: params.get("session"), entry: params.get("entry") };
}

function addressOf(sid, entryId) {
  const params = new URLSearchParams();
  if (sid) params.set("session", sid);
  if (entryId) params.set("entry", entryId);
  return "#" + params.toString();
}

function navigate(sid, entryId) {
  location.hash = addressOf(sid, entryId);
}

window.addEventListener("hashchange", () => {
  const address = readAddress();
  if (address.session && address.session !== view.sessionId) openSession(address.session, address.entry);
  else if (address.entry && address.entry !== view.selectedId) select(address.entry, { reveal: true });
});


async function loadSessions(more) {
  let query = "?limit=50&order=updated";
  if (more && list.nextCursor) query += "&cursor=" + encodeURIComponent(list.nextCursor);
  const page = await api("GET", "/v1/sessions" + query);
  list.sessions = more ? list.sessions.concat(page.sessions) : page.sessions;
  list.nextCursor = page.nextCursor;
  renderSessions();
  return list.sessions;
}

function renderSessions() {
  const filter = els.sessionFilter.value.trim().toLowerCase();
  const shown = list.sessions.filter(
    (s) => !filter || (s.name || "").toLowerCase().includes(filter) || s.id.toLowerCase().includes(filter),
  );
  els.sessionList.replaceChildren(
    ...shown.map((s) =>
      h("li", {}, [
        h("button", { type: "button", class: "session-button", "data-session": s.id, "aria-current": s.id === view.sessionId ? "true" : false, onclick: () => navigate(s.id) }, [
          h("span", { class: "session-name", text: s.name || s.id }),
          s.preview ? h("span", { class: "session-preview", text: s.preview }) : null,
          h("span", { class: "session-stats", text: count(s.entryCount, "entry", "entries") + " · " + ago(s.updatedAt), title: "updated " + fullTime(s.updatedAt) }),
        ]),
      ]),
    ),
  );
  els.sessionsEmpty.hidden = shown.length > 0;
  els.sessionsEmpty.textContent = list.sessions.length > 0 ? "No session matches “" + filter + "” in the pages loaded." : "No sessions yet.";
  els.sessionsMore.hidden = !list.nextCursor;
}

/** Keeps the list's figures for the open session current without reloading the list. */
function updateListedSession(info) {
  const index = list.sessions.findIndex((s) => s.id === info.id);
  if (index >= 0) {
    list.sessions[index] = info;
    renderSessions();
  }
}


async function openSession(sid, entryId) {
  const switching = sid !== view.sessionId;
  const generation = ++view.generation;
  if (switching) {
    view.sessionId = sid;
    view.info = null;
    view.roots = [];
    view.nodes = new Map();
    view.rows = [];
    view.rowIndex = new Map();
    view.expanded = new Set();
    view.selectedId = null;
    view.activeIndex = -1;
    view.previews = new Map();
    view.previewQueue = [];
    view.previewLoading = new Set();
    view.detailsAfter = undefined;
    els.tree.scrollTop = 0;
    els.sessionTitle.textContent = sid;
    els.sessionMeta.textContent = "Loading…";
    els.compactionNotice.hidden = true;
    delete els.tree.dataset.renderedSession;
    clearError();
    renderTree();
    showNoEntry();
    renderSessions();
  }
  try {
    const [info, tree] = await Promise.all([api("GET", sessionPath(sid)), api("GET", sessionPath(sid, "/tree"))]);
    if (generation !== view.generation) return;
    applySession(info, tree.roots);
    if (!view.renderedOnce.has(sid)) {
      view.renderedOnce.add(sid);
      // What the browser test times: navigation start → this session's tree on screen.
      performance.mark("viewer:tree-rendered", { detail: { session: sid, rows: view.rows.length, entries: view.nodes.size } });
    }
    els.tree.dataset.renderedSession = sid;
    select(entryId && view.nodes.has(entryId) ? entryId : info.leafId, { reveal: true });
    loadDetails(generation);
  } catch (error) {
    if (generation !== view.generation) return;
    els.sessionMeta.textContent = "";
    showError(error, "Could not open " + sid);
  }
}

/** Takes a fresh SessionInfo and tree; selection, open runs and scroll position stay. */
function applySession(info, roots) {
  view.info = info;
  view.roots = roots;
  view.nodes = indexTree(roots);
  view.path = pathTo(view.nodes, info.leafId);
  renderSessionHeader();
  rebuildRows();
  updateListedSession(info);
  if (view.selectedId && !view.nodes.has(view.selectedId)) showNoEntry();
  updateEntryPane();
}

function renderSessionHeader() {
  const info = view.info;
  els.sessionTitle.textContent = info.name || info.id;
  const parts = [
    info.name ? info.id : null,
    count(info.entryCount, "entry", "entries"),
    count(info.messageCount, "message"),
    "updated " + ago(info.updatedAt),
    info.parentSession ? "forked from " + info.parentSession.id + " at " + info.parentSession.entryId : null,
  ];
  els.sessionMeta.textContent = parts.filter(Boolean).join(" · ");
  els.sessionMeta.title = "created " + fullTime(info.createdAt) + ", updated " + fullTime(info.updatedAt);
  els.compactButton.disabled = !info.leafId;
}

/**
 * Fetches the session again. With followLeaf, a selection that was the leaf moves with it when
 * the leaf only went forward (an agent appending): watching a live session keeps showing its end.
 */
async function refreshSession(knownInfo, followLeaf) {
  const sid = view.sessionId;
  const generation = view.generation;
  const previousLeaf = view.info ? view.info.leafId : null;
  const wasAtLeaf = Boolean(previousLeaf) && view.selectedId === previousLeaf;
  const [info, tree] = await Promise.all([
    knownInfo ? Promise.resolve(knownInfo) : api("GET", sessionPath(sid)),
    api("GET", sessionPath(sid, "/tree")),
  ]);
  if (generation !== view.generation) return;
  applySession(info, tree.roots);
  loadDetails(generation);
  if (followLeaf && wasAtLeaf && info.leafId !== previousLeaf && view.path.has(previousLeaf)) {
    select(info.leafId, { reveal: true });
  }
}

// Polling compares the cheap SessionInfo; the tree is fetched again only when it moved.
async function poll() {
  if (!view.sessionId || !view.info || view.polling || document.hidden) return;
  view.polling = true;
  const generation = view.generation;
  try {
    const info = await api("GET", sessionPath(view.sessionId));
    if (generation !== view.generation) return;
    const known = view.info;
    if (info.leafId !== known.leafId || info.entryCount !== known.entryCount || info.updatedAt !== known.updatedAt) {
      await refreshSession(info, true);
    }
  } catch (error) {
    if (generation === view.generation) showError(error);
  } finally {
    view.polling = false;
  }
}

/** Details of model, thinking, tools, name and label entries, in one listing, only new ones. */
async function loadDetails(generation) {
  const sid = view.sessionId;
  for (let page = 0; page < 20; page++) {
    let query = "?limit=1000&type=" + DETAIL_TYPES;
    if (view.detailsAfter !== undefined) query += "&after=" + view.detailsAfter;
    let body;
    try {
      body = await api("GET", sessionPath(sid, "/entries" + query));
    } catch (error) {
      if (generation === view.generation) showError(error);
      return;
    }
    if (generation !== view.generation) return;
    for (const entry of body.entries) {
      view.previews.set(entry.id, describeEntry(entry));
      view.detailsAfter = entry.seq;
    }
    if (!body.nextCursor) break;
  }
  scheduleRender();
}


function rebuildRows() {
  view.rows = flattenTree(view.roots, view.info ? view.info.leafId : null, view.selectedId, view.expanded);
  view.rowIndex = new Map();
  view.rows.forEach((row, index) => {
    if (row.kind === "node") view.rowIndex.set(row.node.id, index);
  });
  if (view.selectedId && view.rowIndex.has(view.selectedId)) view.activeIndex = view.rowIndex.get(view.selectedId);
  if (view.activeIndex >= view.rows.length) view.activeIndex = view.rows.length - 1;
  renderTree();
}

let renderPending = false;
function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    renderTree();
  });
}

/** Draws only the rows in view (plus OVERSCAN): the cost of a frame does not grow with the session. */
function renderTree() {
  const total = view.rows.length;
  els.treeSpacer.style.height = total * ROW_HEIGHT + "px";
  const top = els.tree.scrollTop;
  const height = els.tree.clientHeight || 600;
  const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(total, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
  const fragment = document.createDocumentFragment();
  for (let i = first; i < last; i++) fragment.append(rowElement(view.rows[i], i));
  els.treeSpacer.replaceChildren(fragment);
  els.tree.dataset.rows = String(total);
  const active = view.rows[view.activeIndex];
  if (active && view.activeIndex >= first && view.activeIndex < last) els.tree.setAttribute("aria-activedescendant", rowDomId(active));
  else els.tree.removeAttribute("aria-activedescendant");
  requestPreviews(first, last);
}

function rowDomId(row) {
  return row.kind === "run" ? "run-" + row.key : "row-" + row.node.id;
}

const KIND_NAMES = {
  compaction: "compaction",
  branch_summary: "branch summary",
  model_change: "model",
  thinking_level_change: "thinking",
  active_tools_change: "tools",
  session_info: "name",
  label: "label",
  custom: "custom",
  custom_message: "custom message",
};

function rowElement(row, index) {
  const indent = h("span", { class: "indent", "aria-hidden": "true" });
  indent.style.width = row.depth * INDENT + "px";
  const el = row.kind === "run" ? runRowElement(row, indent) : nodeRowElement(row, indent);
  el.id = rowDomId(row);
  el.dataset.index = String(index);
  el.setAttribute("role", "treeitem");
  el.setAttribute("aria-level", String(row.depth + 1));
  el.style.top = index * ROW_HEIGHT + "px";
  el.style.backgroundSize = row.depth * INDENT + "px 100%";
  if (index === view.activeIndex) el.classList.add("active");
  return el;
}

function runRowElement(row, indent) {
  const onPath = view.path.has(row.key);
  row.description ??= describeRun(row.nodes);
  const el = h("div", { class: "row run " + (onPath ? "on-path" : "off-path"), "aria-expanded": row.expanded ? "true" : "false", "aria-selected": "false", "data-run": row.key, title: row.description }, [
    indent,
    h("button", { type: "button", tabindex: "-1", text: row.expanded ? "Collapse" : "Expand", "aria-label": (row.expanded ? "Collapse " : "Expand ") + count(row.nodes.length, "entry", "entries") }),
    h("span", { class: "text", text: (row.expanded ? "▾ " : "⋯ ") + count(row.nodes.length, "entry", "entries") + " · " + row.description }),
  ]);
  return el;
}

function nodeRowElement(row, indent) {
  const node = row.node;
  const isLeaf = view.info && node.id === view.info.leafId;
  const onPath = view.path.has(node.id);
  const classes = ["row", onPath ? "on-path" : "off-path"];
  if (isLeaf) classes.push("leaf");
  if (node.type === "message" && node.role) classes.push("role-" + node.role);
  const kind = node.type === "message"
    ? h("span", { class: "kind", text: node.role === "toolResult" ? "tool result" : node.role || "message" })
    : h("span", { class: "mark mark-" + node.type, text: KIND_NAMES[node.type] || node.type });
  const preview = view.previews.get(node.id);
  const branches = node.children.length > 1 ? h("span", { class: "branches", text: node.children.length + " branches" }) : null;
  return h("div", { class: classes.join(" "), "aria-selected": node.id === view.selectedId ? "true" : "false", "data-id": node.id, "data-type": node.type, title: node.id + " · " + fullTime(node.timestamp) }, [
    indent,
    h("span", { class: "fork", "aria-hidden": "true", text: row.fork ? "↳" : "" }),
    kind,
    h("span", { class: "text", text: preview ? preview.replace(/\s+/g, " ").slice(0, 300) : "" }),
    node.label !== undefined ? h("span", { class: "badge label-chip", text: node.label, "aria-label": "label " + node.label }) : null,
    branches,
    isLeaf ? h("span", { class: "badge leaf-badge", text: "leaf" }) : null,
    h("span", { class: "time", text: shortTime(node.timestamp) }),
  ]);
}

// Entry payloads are not in the tree: rows in view fetch theirs, a few at a time.
function requestPreviews(first, last) {
  for (let i = first; i < last; i++) {
    const row = view.rows[i];
    if (row.kind !== "node") continue;
    const id = row.node.id;
    if (view.previews.has(id) || view.previewLoading.has(id)) continue;
    if (DETAIL_TYPE_SET.has(row.node.type)) continue;
    view.previewLoading.add(id);
    view.previewQueue.push(id);
  }
  pumpPreviews();
}

function pumpPreviews() {
  const sid = view.sessionId;
  while (view.previewActive < PREVIEW_FETCHES && view.previewQueue.length > 0) {
    const id = view.previewQueue.shift();
    if (!isRowInView(id)) {
      view.previewLoading.delete(id);
      continue;
    }
    view.previewActive++;
    const previews = view.previews;
    api("GET", sessionPath(sid, "/entries/" + encodeURIComponent(id)))
      .then((entry) => previews.set(id, describeEntry(entry)))
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

function isRowInView(id) {
  const index = view.rowIndex.get(id);
  if (index === undefined) return false;
  const top = Math.floor(els.tree.scrollTop / ROW_HEIGHT) - OVERSCAN;
  const bottom = Math.ceil((els.tree.scrollTop + els.tree.clientHeight) / ROW_HEIGHT) + OVERSCAN;
  return index >= top && index < bottom;
}

function scrollToRow(index, center) {
  const tree = els.tree;
  const top = index * ROW_HEIGHT;
  if (center) tree.scrollTop = Math.max(0, top - (tree.clientHeight - ROW_HEIGHT) / 2);
  else if (top < tree.scrollTop) tree.scrollTop = top;
  else if (top + ROW_HEIGHT > tree.scrollTop + tree.clientHeight) tree.scrollTop = top + ROW_HEIGHT - tree.clientHeight;
}

function toggleRun(row) {
  if (row.expanded) for (const node of row.nodes) view.expanded.delete(node.id);
  else for (const node of row.nodes) view.expanded.add(node.id);
  rebuildRows();
}

els.tree.addEventListener("scroll", scheduleRender, { passive: true });
window.addEventListener("resize", scheduleRender);

els.tree.addEventListener("click", (event) => {
  const el = event.target.closest(".row");
  if (!el) return;
  const row = view.rows[Number(el.dataset.index)];
  if (!row) return;
  view.activeIndex = Number(el.dataset.index);
  if (row.kind === "run") toggleRun(row);
  else select(row.node.id);
  els.tree.focus({ preventScroll: true });
});

els.tree.addEventListener("keydown", (event) => {
  if (view.rows.length === 0) return;
  let index = view.activeIndex < 0 ? view.rowIndex.get(view.selectedId) ?? 0 : view.activeIndex;
  const row = view.rows[index];
  switch (event.key) {
    case "ArrowDown":
      index = Math.min(view.rows.length - 1, index + 1);
      break;
    case "ArrowUp":
      index = Math.max(0, index - 1);
      break;
    case "Home":
      index = 0;
      break;
    case "End":
      index = view.rows.length - 1;
      break;
    case "PageDown":
      index = Math.min(view.rows.length - 1, index + Math.floor(els.tree.clientHeight / ROW_HEIGHT));
      break;
    case "PageUp":
      index = Math.max(0, index - Math.floor(els.tree.clientHeight / ROW_HEIGHT));
      break;
    case "ArrowRight":
    case "ArrowLeft":
    case "Enter":
    case " ":
      if (row && row.kind === "run") {
        if (event.key === "Enter" || event.key === " " || (event.key === "ArrowRight") !== row.expanded) toggleRun(row);
        event.preventDefault();
      }
      return;
    default:
      return;
  }
  event.preventDefault();
  view.activeIndex = index;
  scrollToRow(index, false);
  const target = view.rows[index];
  if (target.kind === "node") select(target.node.id, { debounce: true });
  else renderTree();
});


let contextTimer = 0;

function select(id, options = {}) {
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
  // Arrow keys select as they move; only the entry the person stops on is fetched.
  if (options.debounce) contextTimer = setTimeout(() => loadContext(id), 150);
  else loadContext(id);
}

function showNoEntry() {
  view.selectedId = null;
  els.entryTitle.textContent = "Context";
  if (!view.sessionId) els.entryMeta.textContent = "Pick a session on the left.";
  else if (!view.info) els.entryMeta.textContent = "Loading…";
  else els.entryMeta.textContent = view.info.leafId ? "Select an entry in the tree." : "This session has no entries yet.";
  els.entryActions.hidden = true;
  els.context.replaceChildren();
  delete els.context.dataset.contextFor;
}

function updateEntryPane() {
  const node = view.selectedId ? view.nodes.get(view.selectedId) : null;
  if (!node) return;
  const isLeaf = view.info && node.id === view.info.leafId;
  const where = isLeaf ? "the leaf" : view.path.has(node.id) ? "on the current branch" : "on another branch";
  const kind = node.type === "message" ? (node.role || "") + " message" : KIND_NAMES[node.type] || node.type;
  els.entryTitle.textContent = "Context at " + kind;
  els.entryMeta.textContent = [node.id, fullTime(node.timestamp), where, node.label ? "label “" + node.label + "”" : null].filter(Boolean).join(" · ");
  els.entryActions.hidden = false;
  els.moveLeafButton.disabled = Boolean(isLeaf);
  els.labelClear.disabled = node.label === undefined;
  if (document.activeElement !== els.labelInput) els.labelInput.value = node.label || "";
}

async function loadContext(id) {
  const request = ++view.contextRequest;
  const sid = view.sessionId;
  els.context.setAttribute("aria-busy", "true");
  try {
    const context = await api("GET", sessionPath(sid, "/context?leafId=" + encodeURIComponent(id)));
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


els.moveLeafButton.addEventListener("click", () =>
  act(els.moveLeafButton, async () => {
    await api("PUT", sessionPath(view.sessionId, "/leaf"), { targetId: view.selectedId });
    await refreshSession();
  }),
);

els.forkButton.addEventListener("click", () =>
  act(els.forkButton, async () => {
    const fork = await api("POST", sessionPath(view.sessionId, "/fork"), { entryId: view.selectedId });
    list.sessions.unshift(fork);
    navigate(fork.id, fork.leafId);
  }),
);

function writeLabel(label, button) {
  const targetId = view.selectedId;
  return act(button, async () => {
    // A label entry without a label (or a blank one) clears it.
    const entry = label ? { type: "label", targetId, label } : { type: "label", targetId };
    await api("POST", sessionPath(view.sessionId, "/entries"), entry);
    els.labelInput.blur();
    await refreshSession();
  });
}

els.labelForm.addEventListener("submit", (event) => {
  event.preventDefault();
  writeLabel(els.labelInput.value.trim(), event.submitter);
});
els.labelClear.addEventListener("click", () => writeLabel("", els.labelClear));

els.compactButton.addEventListener("click", () =>
  act(els.compactButton, async () => {
    els.compactionNotice.hidden = true;
    const { entry } = await api("POST", sessionPath(view.sessionId, "/compact"), {});
    els.compactionNotice.replaceChildren(
      h("button", { type: "button", class: "notice-dismiss", text: "Dismiss", onclick: () => { els.compactionNotice.hidden = true; } }),
      h("h3", { text: "Compacted: ≈ " + count(entry.tokensBefore || 0, "token") + " before, kept from " + (entry.firstKeptEntryId || "the start") }),
      h("div", { class: "compaction-summary", text: entry.summary }),
    );
    els.compactionNotice.hidden = false;
    await refreshSession();
    select(entry.id, { reveal: true });
  }),
);

els.sessionFilter.addEventListener("input", renderSessions);
els.sessionsMore.addEventListener("click", () => act(els.sessionsMore, () => loadSessions(true)));
els.sessionsRefresh.addEventListener("click", () => act(els.sessionsRefresh, () => loadSessions(false)));
els.errorDismiss.addEventListener("click", clearError);
els.tokenButton.addEventListener("click", async () => {
  tokenDeclined = false;
  if (await askToken("Enter the API key to use for this tab.")) {
    await act(null, async () => {
      await loadSessions(false);
      if (view.sessionId) await refreshSession();
    });
  }
});

// Nothing fails silently: whatever escaped an action is still shown.
window.addEventListener("unhandledrejection", (event) => showError(event.reason));


async function start() {
  const address = readAddress();
  if (address.session) openSession(address.session, address.entry);
  else showNoEntry();
  try {
    const sessions = await loadSessions(false);
    if (!address.session && !view.sessionId && sessions.length > 0) {
      history.replaceState(null, "", addressOf(sessions[0].id));
      openSession(sessions[0].id);
    }
  } catch (error) {
    showError(error);
  }
  setInterval(poll, POLL_MS);
}

start();
`;
