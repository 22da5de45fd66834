/*
 * The elements of the page's markup (src/viewer/page.ts) the script works with, each checked to
 * be there and of its kind once, at start, instead of at every use.
 */

function element<T extends HTMLElement>(id: string, kind: new () => T): T {
  const el = document.getElementById(id);
  if (!(el instanceof kind)) throw new Error(`the page has no ${kind.name} #${id}`);
  return el;
}

export const els = {
  error: element("error", HTMLDivElement),
  errorText: element("error-text", HTMLParagraphElement),
  errorDismiss: element("error-dismiss", HTMLButtonElement),
  tokenButton: element("token-button", HTMLButtonElement),
  liveStatus: element("live-status", HTMLSpanElement),
  tokenDialog: element("token-dialog", HTMLDialogElement),
  tokenReason: element("token-reason", HTMLParagraphElement),
  tokenInput: element("token-input", HTMLInputElement),
  sessionsRefresh: element("sessions-refresh", HTMLButtonElement),
  sessionsStatus: element("sessions-status", HTMLSpanElement),
  sessionFilter: element("session-filter", HTMLInputElement),
  sessionList: element("session-list", HTMLUListElement),
  sessionsEmpty: element("sessions-empty", HTMLParagraphElement),
  sessionsMore: element("sessions-more", HTMLButtonElement),
  sessionTitle: element("session-title", HTMLHeadingElement),
  sessionMeta: element("session-meta", HTMLParagraphElement),
  compactButton: element("compact-button", HTMLButtonElement),
  searchForm: element("search-form", HTMLFormElement),
  searchInput: element("search-input", HTMLInputElement),
  searchThinking: element("search-thinking", HTMLInputElement),
  searchPanel: element("search-panel", HTMLDivElement),
  searchStatus: element("search-status", HTMLParagraphElement),
  searchResults: element("search-results", HTMLOListElement),
  searchMore: element("search-more", HTMLButtonElement),
  compactDialog: element("compact-dialog", HTMLDialogElement),
  compactContext: element("compact-context", HTMLParagraphElement),
  compactKeep: element("compact-keep", HTMLInputElement),
  compactKeepRange: element("compact-keep-range", HTMLInputElement),
  compactPreview: element("compact-preview", HTMLParagraphElement),
  compactConfirm: element("compact-confirm", HTMLButtonElement),
  compactionNotice: element("compaction-notice", HTMLDivElement),
  timeTravel: element("time-travel", HTMLDivElement),
  timeSlider: element("time-slider", HTMLInputElement),
  timeLabel: element("time-label", HTMLSpanElement),
  timeNow: element("time-now", HTMLButtonElement),
  tree: element("tree", HTMLDivElement),
  treeSpacer: element("tree-spacer", HTMLDivElement),
  entryTitle: element("entry-title", HTMLHeadingElement),
  entryMeta: element("entry-meta", HTMLParagraphElement),
  entryActions: element("entry-actions", HTMLDivElement),
  moveLeafButton: element("move-leaf-button", HTMLButtonElement),
  forkButton: element("fork-button", HTMLButtonElement),
  forkDialog: element("fork-dialog", HTMLDialogElement),
  forkFrom: element("fork-from", HTMLParagraphElement),
  forkName: element("fork-name", HTMLInputElement),
  labelForm: element("label-form", HTMLFormElement),
  labelInput: element("label-input", HTMLInputElement),
  labelClear: element("label-clear", HTMLButtonElement),
  context: element("context", HTMLDivElement),
};
