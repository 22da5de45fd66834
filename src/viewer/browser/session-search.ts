import type { HeaderMatch, SearchHit } from "../../core/search";
import { act } from "./act";
import { session } from "./api";
import { h } from "./dom";
import { select } from "./entry-pane";
import { els } from "./page-elements";
import { view } from "./view-state";

/*
 * The search box of the open session: its name or system prompt when they match a query, then its
 * entries matching it, newest first, each a button that selects the entry in the tree (opening
 * the run it sits in). Snippets reach the page as
 * text, their matches as <mark> elements around text: nothing a session holds becomes markup.
 */

const PAGE = 20;

const search = {
  query: "",
  thinking: false,
  nextCursor: null as string | null,
};

/** A snippet as text nodes, its matches in <mark>. */
function snippetNodes(hit: Pick<SearchHit, "snippet" | "highlights">): Node[] {
  const nodes: Node[] = [];
  let at = 0;
  for (const [start, end] of hit.highlights) {
    if (start > at) nodes.push(document.createTextNode(hit.snippet.slice(at, start)));
    nodes.push(h("mark", { text: hit.snippet.slice(start, end) }));
    at = end;
  }
  if (at < hit.snippet.length) nodes.push(document.createTextNode(hit.snippet.slice(at)));
  return nodes;
}

/** A match in the session's name or system prompt: no entry to select. */
function headerItem(match: HeaderMatch): HTMLLIElement {
  const kind = match.field === "name" ? "session name" : "system prompt";
  return h("li", {}, [
    h("div", { class: "search-hit" }, [h("span", { class: "hit-kind", text: kind }), ...snippetNodes(match)]),
  ]);
}

function hitItem(hit: SearchHit): HTMLLIElement {
  const kind = [
    hit.role ?? hit.type,
    hit.field === "thinking" ? "thinking" : null,
    hit.onBranch ? null : "off branch",
  ]
    .filter(Boolean)
    .join(" · ");
  return h("li", {}, [
    h(
      "button",
      {
        type: "button",
        class: `search-hit${hit.onBranch ? "" : " off-branch"}`,
        "data-entry": hit.entryId,
        onclick: () => select(hit.entryId, { reveal: true }),
      },
      [h("span", { class: "hit-kind", text: kind }), ...snippetNodes(hit)],
    ),
  ]);
}

async function run(more: boolean): Promise<void> {
  const sessionId = view.sessionId;
  if (!sessionId || !search.query) return;
  const page = await session(sessionId).search(search.query, {
    limit: PAGE,
    ...(search.thinking ? { thinking: true } : {}),
    ...(more && search.nextCursor ? { cursor: search.nextCursor } : {}),
  });
  if (sessionId !== view.sessionId) return;
  if (!more) els.searchResults.replaceChildren();
  els.searchResults.append(...(page.header ?? []).map(headerItem), ...page.hits.map(hitItem));
  search.nextCursor = page.nextCursor;
  const shown = els.searchResults.childElementCount;
  els.searchStatus.textContent =
    shown === 0
      ? "No matches."
      : `${shown}${page.nextCursor ? "+" : ""} ${shown === 1 ? "match" : "matches"}, newest first`;
  els.searchMore.hidden = page.nextCursor === null;
  els.searchPanel.hidden = false;
}

/** Empties the results (another session was opened, or the box was cleared). */
export function clearSearch(): void {
  search.query = "";
  search.nextCursor = null;
  els.searchResults.replaceChildren();
  els.searchStatus.textContent = "";
  els.searchPanel.hidden = true;
}

export function installSearch(): void {
  els.searchForm.addEventListener("submit", (event) => {
    event.preventDefault();
    search.query = els.searchInput.value.trim();
    search.thinking = els.searchThinking.checked;
    search.nextCursor = null;
    if (!search.query) clearSearch();
    else void act(null, () => run(false));
  });
  els.searchInput.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      els.searchInput.value = "";
      clearSearch();
    }
  });
  els.searchMore.addEventListener("click", () => act(els.searchMore, () => run(true)));
}
