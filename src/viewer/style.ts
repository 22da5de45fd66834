import { PALETTE } from "./page-headers";
import { TREE_ROW_HEIGHT } from "./tree-row-height";

/** The viewer's stylesheet; tree rows are drawn at TREE_ROW_HEIGHT, which the script relies on. */
// biome-ignore lint/complexity/noUselessStringRaw: browser code, kept raw so a backslash added later reaches the page as written
export const viewerStyle = String.raw`
:root {
  color-scheme: light dark;
  ${PALETTE.light}
  --guide: #d4d6db;
  --accent-soft: #e6edfc;
  --path: #2557d6;
  --leaf: #0f8a4b;
  --leaf-soft: #e2f5ea;
  --error: #b3261e;
  --error-soft: #fdecea;
  --compaction: #8a4dd6;
  --summary: #b06d00;
  --model: #0b7d8c;
  --label: #a1306a;
  --row: ${TREE_ROW_HEIGHT}px;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root {
    ${PALETTE.dark}
    --guide: #3a3f46;
    --accent-soft: #23304d;
    --path: #7ea2ff;
    --leaf: #4cc988;
    --leaf-soft: #183526;
    --error: #ff8a80;
    --error-soft: #3b1c1a;
    --compaction: #c39bff;
    --summary: #f0b44c;
    --model: #53c7d6;
    --label: #f07bb4;
  }
}
* { box-sizing: border-box; }
html, body { height: 100%; margin: 0; }
body { display: flex; flex-direction: column; background: var(--bg); color: var(--text); }
button, input { font: inherit; color: inherit; }
button {
  border: 1px solid var(--line); background: var(--pane); border-radius: 6px; padding: 3px 10px;
  cursor: pointer;
}
button:hover:not(:disabled) { border-color: var(--accent); }
button:disabled { opacity: .5; cursor: default; }
input[type=search], input[type=text], input[type=password] {
  border: 1px solid var(--line); background: var(--pane); border-radius: 6px; padding: 4px 8px;
}
:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
.muted { color: var(--muted); }
.spacer { flex: 1; }

.topbar { display: flex; align-items: center; gap: 12px; padding: 8px 16px; border-bottom: 1px solid var(--line); }
.topbar h1 { font-size: 16px; margin: 0; }
.topbar a { color: var(--accent); }
.topbar-note { color: var(--muted); }
.live-status { color: var(--muted); font-size: 12px; }
.live-status[data-status="live"] { color: #1a7f37; }
.live-status[data-status="reconnecting"] { color: #9a6700; }

.error {
  display: flex; align-items: flex-start; gap: 8px; margin: 8px 16px 0; padding: 8px 12px;
  background: var(--error-soft); color: var(--error); border: 1px solid var(--error); border-radius: 6px;
}
.error[hidden] { display: none; }
.error p { margin: 0; flex: 1; white-space: pre-wrap; }
.error button { border: none; background: transparent; color: inherit; font-size: 16px; padding: 0 4px; }

.layout {
  flex: 1; min-height: 0; display: grid; gap: 1px; background: var(--line);
  grid-template-columns: minmax(220px, 280px) minmax(340px, 1fr) minmax(360px, 1.15fr);
}
.pane { background: var(--pane); min-height: 0; display: flex; flex-direction: column; overflow: hidden; }
.pane-head { display: flex; align-items: flex-start; gap: 8px; padding: 10px 12px 6px; }
.pane-head h2 { font-size: 15px; margin: 0; overflow-wrap: anywhere; }
.pane-head p { margin: 2px 0 0; font-size: 12px; }
.titles { flex: 1; min-width: 0; }

.sessions input[type=search] { margin: 0 12px 8px; }
.session-list { list-style: none; margin: 0; padding: 0 8px; overflow: auto; flex: 1; }
.session-list li { margin: 0 0 4px; }
.session-button {
  display: block; width: 100%; text-align: left; border: 1px solid transparent; border-radius: 6px;
  padding: 6px 8px; background: transparent;
}
.session-button[aria-current=true] { background: var(--accent-soft); border-color: var(--accent); }
.session-name { display: block; font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.session-preview {
  display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; overflow: hidden;
  color: var(--muted); font-size: 12px;
}
.session-stats { display: block; color: var(--muted); font-size: 11px; }
.more { margin: 8px 12px; }
.sessions > .muted { padding: 0 12px; }

.search-form { display: flex; align-items: center; gap: 8px; padding: 0 12px 8px; }
.search-form input[type=search] { flex: 1; min-width: 0; }
.search-option { font-size: 12px; color: var(--muted); white-space: nowrap; }
.search-panel { margin: 0 12px 8px; border: 1px solid var(--line); border-radius: 6px; max-height: 34vh; overflow: auto; }
.search-panel[hidden] { display: none; }
.search-panel > p { margin: 6px 8px; font-size: 12px; }
.search-results { list-style: none; margin: 0; padding: 0; }
.search-hit {
  display: block; width: 100%; text-align: left; border: none; border-top: 1px solid var(--line);
  border-radius: 0; padding: 5px 8px; background: transparent;
}
.search-hit:hover, .search-hit:focus-visible { background: var(--accent-soft); }
.search-hit .hit-kind { font-size: 11px; color: var(--muted); margin-right: 6px; }
.search-hit.off-branch { color: var(--muted); }
.search-hit mark { background: var(--accent-soft); color: inherit; font-weight: 600; border-radius: 2px; }

.notice {
  margin: 0 12px 8px; padding: 8px 10px; border-left: 3px solid var(--compaction);
  background: var(--code); border-radius: 4px; max-height: 30vh; overflow: auto; white-space: pre-wrap;
}
.notice[hidden] { display: none; }
.notice h3 { margin: 0 0 4px; font-size: 13px; }
.notice-dismiss { float: right; font-size: 12px; padding: 0 8px; }

.tree { position: relative; flex: 1; overflow: auto; border-top: 1px solid var(--line); contain: strict; }
.tree:focus-visible { outline-offset: -2px; }
.tree-spacer { position: relative; width: 100%; }
.row {
  position: absolute; left: 0; right: 0; height: var(--row); display: flex; align-items: center; gap: 6px;
  padding-right: 8px; white-space: nowrap; cursor: pointer; border-left: 3px solid transparent;
  background-repeat: no-repeat;
  background-image: repeating-linear-gradient(to right, transparent 0 9px, var(--guide) 9px 10px, transparent 10px 18px);
}
.row:hover { background-color: var(--accent-soft); }
.row.on-path { border-left-color: var(--path); }
.row.off-path { color: var(--muted); }
.row[aria-selected=true] { background-color: var(--accent-soft); box-shadow: inset 0 0 0 1px var(--accent); }
.row.active { outline: 2px solid var(--accent); outline-offset: -2px; }
.row.leaf { background-color: var(--leaf-soft); }
.row .indent { flex: none; }
.row .fork { color: var(--path); flex: none; width: 14px; text-align: center; }
.row .kind { font-weight: 600; flex: none; }
.row .text { overflow: hidden; text-overflow: ellipsis; flex: 1; min-width: 0; }
.row .time { color: var(--muted); font-size: 11px; flex: none; font-variant-numeric: tabular-nums; }
.row .branches { color: var(--path); font-size: 11px; flex: none; border: 1px solid currentColor; border-radius: 8px; padding: 0 6px; }
.run { color: var(--muted); font-style: italic; }
.run button { font-style: normal; padding: 0 6px; font-size: 12px; }
.badge { border-radius: 8px; padding: 0 6px; font-size: 11px; flex: none; font-style: normal; }
.leaf-badge { background: var(--leaf); color: var(--pane); }
.then-badge { border: 1px dashed var(--leaf); color: var(--leaf); }
.time-travel { display: flex; align-items: center; gap: 8px; padding: 0 12px 8px; }
.time-travel input[type="range"] { flex: 1; min-width: 80px; }
.label-chip { background: var(--label); color: var(--pane); }
.edited-chip { border: 1px dashed var(--compaction); color: var(--compaction); }
.mark { border-radius: 4px; padding: 0 5px; font-size: 11px; border: 1px solid currentColor; flex: none; font-style: normal; }
.mark-compaction { color: var(--compaction); }
.mark-branch_summary { color: var(--summary); }
.mark-context_edit { color: var(--compaction); }
.mark-usage { color: var(--muted); }
.mark-model_change, .mark-thinking_level_change, .mark-active_tools_change { color: var(--model); }
.mark-session_info, .mark-label { color: var(--label); }
.role-user .kind { color: var(--accent); }
.role-assistant .kind { color: var(--leaf); }
.role-toolResult .kind { color: var(--muted); }
.legend { margin: 0; padding: 6px 12px; font-size: 11px; border-top: 1px solid var(--line); }

.entry-actions { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; padding: 0 12px 8px; }
.entry-actions[hidden] { display: none; }
.label-form { display: flex; align-items: center; gap: 6px; }
.label-form input { width: 12em; }
.context { flex: 1; overflow: auto; padding: 0 12px 24px; border-top: 1px solid var(--line); }
.context-summary {
  display: flex; flex-wrap: wrap; gap: 4px 14px; padding: 8px 0; margin: 0; font-size: 12px; color: var(--muted);
  position: sticky; top: 0; background: var(--pane); z-index: 1; border-bottom: 1px solid var(--line);
}
.context-summary strong { color: var(--text); }
.message { border: 1px solid var(--line); border-radius: 8px; margin: 8px 0; padding: 8px 10px; }
.message header { display: flex; gap: 8px; align-items: baseline; font-size: 12px; color: var(--muted); margin-bottom: 4px; }
.message header .role { font-weight: 700; color: var(--text); text-transform: none; }
.message header .tokens { margin-left: auto; }
.message.role-user { border-left: 3px solid var(--accent); }
.message.role-assistant { border-left: 3px solid var(--leaf); }
.message.role-compactionSummary { border-left: 3px solid var(--compaction); }
.message.role-branchSummary { border-left: 3px solid var(--summary); }
.text-part { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; }
details { margin: 4px 0; }
summary { cursor: pointer; color: var(--muted); }
pre {
  background: var(--code); padding: 6px 8px; border-radius: 6px; overflow: auto; max-height: 24em;
  white-space: pre-wrap; overflow-wrap: anywhere; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; margin: 4px 0;
}
.tool-call { border: 1px dashed var(--line); border-radius: 6px; padding: 4px 8px; margin: 6px 0; }
.tool-call .tool-name { font-family: ui-monospace, monospace; font-weight: 600; }
.tool-result.error { color: var(--error); }
.context img { max-width: 100%; max-height: 320px; border-radius: 4px; border: 1px solid var(--line); display: block; margin: 4px 0; }
.earlier { margin: 8px 0; }

dialog { border: 1px solid var(--line); border-radius: 10px; background: var(--pane); color: var(--text); max-width: 420px; }
dialog::backdrop { background: rgb(0 0 0 / .35); }
dialog h2 { margin-top: 0; font-size: 16px; }
dialog input { width: 100%; }
.dialog-buttons { display: flex; justify-content: flex-end; gap: 8px; }
/* The confirming button comes first in the form, so Enter confirms; it is shown last. */
.dialog-buttons.confirm-first { flex-direction: row-reverse; justify-content: flex-start; }
.keep-row { display: flex; align-items: center; gap: 8px; margin: 4px 0; }
.keep-row input[type=range] { flex: 1; }
.keep-row input[type=number] { width: 8em; }
#compact-preview { min-height: 3em; }

@media (max-width: 900px) {
  .layout { grid-template-columns: 1fr; grid-auto-rows: minmax(50vh, auto); overflow: auto; }
}
`;
