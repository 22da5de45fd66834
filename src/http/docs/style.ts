import { PALETTE } from "../../viewer/page-headers";

/** The reference page's stylesheet, in the viewer's colours. */
export const docsStyle = `
:root {
  color-scheme: light dark;
  ${PALETTE.light}
  --get: #0f8a4b;
  --post: #2557d6;
  --put: #b06d00;
  --patch: #8a4dd6;
  --delete: #b3261e;
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root {
    ${PALETTE.dark}
    --get: #4cc988;
    --post: #7ea2ff;
    --put: #f0b44c;
    --patch: #c39bff;
    --delete: #ff8a80;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); }
a { color: var(--accent); }
code { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--code); padding: 0 3px; border-radius: 3px; overflow-wrap: anywhere; }
.topbar { display: flex; align-items: baseline; gap: 16px; padding: 10px 24px; background: var(--pane); border-bottom: 1px solid var(--line); }
.topbar h1 { font-size: 17px; margin: 0; }
.spacer { flex: 1; }
.muted { color: var(--muted); font-weight: normal; }
.docs { max-width: 1100px; margin: 0 auto; padding: 8px 24px 64px; }
.lead { font-size: 16px; }
h2 { font-size: 18px; margin: 32px 0 12px; }
h3 { font-size: 15px; margin: 0 0 6px; }
h4 { font-size: 13px; margin: 16px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.toc { list-style: none; padding: 0; margin: 0; columns: 2 420px; }
.toc li { margin: 2px 0; break-inside: avoid; }
.toc a { text-decoration: none; }
.method { display: inline-block; min-width: 58px; font: 600 11.5px/1.8 ui-monospace, monospace; text-align: center; border-radius: 4px; color: #fff; }
.method-get, .method-head { background: var(--get); }
.method-post { background: var(--post); }
.method-put { background: var(--put); }
.method-patch { background: var(--patch); }
.method-delete { background: var(--delete); }
.operation, .component { background: var(--pane); border: 1px solid var(--line); border-radius: 8px; margin: 8px 0; }
.operation > summary { padding: 8px 12px; cursor: pointer; }
.operation > summary .path { background: none; font-size: 13.5px; font-weight: 600; }
.operation-body, .component { padding: 4px 16px 12px; }
.component { padding-top: 12px; }
.op-summary { color: var(--muted); margin-left: 6px; }
table { border-collapse: collapse; width: 100%; margin: 4px 0; }
th, td { text-align: left; vertical-align: top; padding: 5px 8px; border-top: 1px solid var(--line); }
th { font-weight: 600; color: var(--muted); font-size: 12px; }
.properties td:first-child { width: 30%; white-space: nowrap; }
.properties p, .parameters p { margin: 2px 0; }
.required { font-size: 11px; color: var(--delete); }
.type { font-weight: 500; }
.format, .constraints { color: var(--muted); }
.constraints { font-size: 12.5px; }
.media { margin: 4px 0 8px; }
.media-type { margin: 0 0 4px; }
.responses { list-style: none; padding: 0; margin: 0; }
.responses > li { border-top: 1px solid var(--line); padding: 6px 0; }
.responses p { margin: 2px 0; }
.status { display: inline-block; min-width: 40px; font: 600 12px/1.6 ui-monospace, monospace; text-align: center; border-radius: 4px; border: 1px solid var(--line); }
.status-2xx { color: var(--get); }
.status-4xx { color: var(--put); }
.status-5xx { color: var(--delete); }
.variants { margin: 4px 0; }
.variant { border-left: 3px solid var(--line); padding: 2px 0 2px 10px; margin: 4px 0; }
.variant > summary { cursor: pointer; }
.all-of { padding-left: 20px; }
.others { margin: 4px 0; color: var(--muted); }
`;
