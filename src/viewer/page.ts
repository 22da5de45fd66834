/**
 * The viewer's markup: three panes (sessions, the selected session's tree, the context of the
 * selected entry) that the script fills in. Static, so it holds no data from any tenant.
 */
export function viewerPage(assets: { script: string; style: string; icon: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sessions · cf-sessions</title>
<link rel="icon" href="${assets.icon}" type="image/svg+xml">
<link rel="stylesheet" href="${assets.style}">
<script src="${assets.script}" defer></script>
</head>
<body>
<header class="topbar">
  <h1>cf-sessions</h1>
  <span class="topbar-note">session trees</span>
  <span class="spacer"></span>
  <span id="live-status" class="live-status" role="status" hidden></span>
  <button type="button" id="token-button">API token…</button>
  <a href="/docs">API docs</a>
</header>
<div id="error" class="error" role="alert" hidden>
  <p id="error-text"></p>
  <button type="button" id="error-dismiss" aria-label="Dismiss the error">×</button>
</div>
<main class="layout">
  <nav class="pane sessions" aria-labelledby="sessions-title">
    <div class="pane-head">
      <h2 id="sessions-title">Sessions</h2>
      <span id="sessions-status" class="live-status" role="status" hidden></span>
      <button type="button" id="sessions-refresh">Refresh</button>
    </div>
    <label class="visually-hidden" for="session-filter">Filter sessions by name</label>
    <input id="session-filter" type="search" placeholder="Filter by name or id" autocomplete="off">
    <ul id="session-list" class="session-list"></ul>
    <p id="sessions-empty" class="muted" hidden>No sessions.</p>
    <button type="button" id="sessions-more" class="more" hidden>Load more</button>
  </nav>
  <section class="pane tree-pane" aria-labelledby="session-title">
    <div class="pane-head">
      <div class="titles">
        <h2 id="session-title">No session selected</h2>
        <p id="session-meta" class="muted"></p>
      </div>
      <button type="button" id="compact-button" disabled>Compact…</button>
    </div>
    <form id="search-form" class="search-form" role="search">
      <label class="visually-hidden" for="search-input">Search this session</label>
      <input id="search-input" type="search" placeholder="Search this session (Enter)" autocomplete="off" disabled>
      <label class="search-option"><input id="search-thinking" type="checkbox"> thinking</label>
    </form>
    <div id="search-panel" class="search-panel" hidden>
      <p id="search-status" class="muted" role="status"></p>
      <ol id="search-results" class="search-results"></ol>
      <button type="button" id="search-more" class="more" hidden>More results</button>
    </div>
    <div id="time-travel" class="time-travel" hidden>
      <label for="time-slider">As of</label>
      <input id="time-slider" type="range" min="0" max="1000" step="1" value="1000">
      <span id="time-label" class="muted" role="status">now</span>
      <button type="button" id="time-now" hidden>Back to now</button>
    </div>
    <div id="compaction-notice" class="notice" role="status" hidden></div>
    <div id="tree" class="tree" role="tree" tabindex="0" aria-labelledby="session-title">
      <div id="tree-spacer" class="tree-spacer" role="none"></div>
    </div>
    <p class="legend muted">
      <span class="badge leaf-badge">leaf</span> current head ·
      <span class="badge then-badge">then</span> the head at the time chosen above ·
      <span class="mark mark-compaction">compaction</span>
      <span class="mark mark-branch_summary">branch summary</span>
      <span class="mark mark-model_change">model</span>
      <span class="mark mark-thinking_level_change">thinking</span> ·
      ⋯ a collapsed run of entries (Enter or → expands)
    </p>
  </section>
  <section class="pane context-pane" aria-labelledby="entry-title">
    <div class="pane-head">
      <div class="titles">
        <h2 id="entry-title">Context</h2>
        <p id="entry-meta" class="muted">Select an entry to see what a model is sent from it.</p>
      </div>
    </div>
    <div id="entry-actions" class="entry-actions" hidden>
      <button type="button" id="move-leaf-button">Move leaf here</button>
      <button type="button" id="fork-button">Fork from here…</button>
      <form id="label-form" class="label-form">
        <label for="label-input">Label</label>
        <input id="label-input" type="text" maxlength="200" autocomplete="off">
        <button type="submit">Set label</button>
        <button type="button" id="label-clear">Clear label</button>
      </form>
    </div>
    <div id="context" class="context" aria-live="polite"></div>
  </section>
</main>
${confirmDialog(
  "compact",
  "Compact the current branch",
  `    <p id="compact-context" class="muted"></p>
    <label for="compact-keep">Keep the newest</label>
    <div class="keep-row">
      <input id="compact-keep-range" type="range" min="0" step="1" aria-label="Tokens to keep">
      <input id="compact-keep" type="number" min="0" step="1" required>
      <span>tokens</span>
    </div>
    <p id="compact-preview" role="status"></p>`,
  "Compact",
  { disabled: true },
)}
${confirmDialog(
  "fork",
  "Fork from this entry",
  `    <p id="fork-from" class="muted"></p>
    <label for="fork-name">Name of the new session</label>
    <input id="fork-name" type="text" maxlength="200" autocomplete="off">
    <p class="muted">Left empty, the new session keeps this one's name.</p>`,
  "Fork",
)}
<dialog id="token-dialog" aria-labelledby="token-title">
  <form method="dialog" id="token-form">
    <h2 id="token-title">API token</h2>
    <p id="token-reason">This service needs a key.</p>
    <label for="token-input">Bearer token</label>
    <input id="token-input" type="password" autocomplete="off" required>
    <p class="muted">Kept in this tab only (sessionStorage).</p>
    <div class="dialog-buttons">
      <button type="submit" value="cancel" formnovalidate>Cancel</button>
      <button type="submit" value="ok">Use token</button>
    </div>
  </form>
</dialog>
</body>
</html>`;
}

/**
 * A dialog that asks before an action: `<name>-dialog`, its form `<name>-form`, its title, the
 * fields, then the action's button (`<name>-confirm`, disabled at first with `{ disabled: true }`)
 * before Cancel.
 */
function confirmDialog(
  name: string,
  title: string,
  fields: string,
  action: string,
  options = { disabled: false },
): string {
  return `<dialog id="${name}-dialog" aria-labelledby="${name}-title">
  <form method="dialog" id="${name}-form">
    <h2 id="${name}-title">${title}</h2>
${fields}
    <div class="dialog-buttons confirm-first">
      <button type="submit" value="ok" id="${name}-confirm"${options.disabled ? " disabled" : ""}>${action}</button>
      <button type="submit" value="cancel" formnovalidate>Cancel</button>
    </div>
  </form>
</dialog>`;
}
