import type { TenantEvent } from "../../core/events";
import type { SessionInfo, SessionPage } from "../../core/session-schemas";
import { navigate } from "./address";
import { client } from "./api";
import { ago, count, fullTime, h, showConnection } from "./dom";
import { showError } from "./error-bar";
import { els } from "./page-elements";
import { list, view } from "./view-state";

/* The tenant's sessions, most recently updated first, a page at a time, filtered on the page. */

const SESSIONS_PAGE = 50;

export async function loadSessions(more: boolean): Promise<SessionInfo[]> {
  const heard: TenantEvent[] = [];
  if (!more) heardWhileReading.add(heard);
  let page: SessionPage;
  try {
    page = await client.list({
      limit: SESSIONS_PAGE,
      order: "updated",
      cursor: more ? list.nextCursor : undefined,
    });
  } finally {
    heardWhileReading.delete(heard);
  }
  list.sessions = more ? list.sessions.concat(page.sessions) : page.sessions;
  list.nextCursor = page.nextCursor;
  // The page may have been read before what they say happened.
  for (const event of heard) applyEvent(event);
  renderSessions();
  return list.sessions;
}

export function renderSessions(): void {
  const filter = els.sessionFilter.value.trim().toLowerCase();
  const shown = list.sessions.filter(
    (s) => !filter || (s.name ?? "").toLowerCase().includes(filter) || s.id.toLowerCase().includes(filter),
  );
  els.sessionList.replaceChildren(
    ...shown.map((s) =>
      h("li", {}, [
        h(
          "button",
          {
            type: "button",
            class: "session-button",
            "data-session": s.id,
            "aria-current": s.id === view.sessionId ? "true" : false,
            onclick: () => navigate(s.id),
          },
          [
            h("span", { class: "session-name", text: s.name || s.id }),
            s.preview ? h("span", { class: "session-preview", text: s.preview }) : null,
            h("span", {
              class: "session-stats",
              text: `${count(s.entryCount, "entry", "entries")} · ${ago(s.updatedAt)}`,
              title: `updated ${fullTime(s.updatedAt)}`,
            }),
          ],
        ),
      ]),
    ),
  );
  els.sessionsEmpty.hidden = shown.length > 0;
  els.sessionsEmpty.textContent =
    list.sessions.length > 0 ? `No session matches “${filter}” in the pages loaded.` : "No sessions yet.";
  els.sessionsMore.hidden = !list.nextCursor;
}

/** Keeps the list's figures for the open session current without reloading the list. */
export function updateListedSession(info: SessionInfo): void {
  const index = list.sessions.findIndex((s) => s.id === info.id);
  if (index >= 0) {
    list.sessions[index] = info;
    renderSessions();
  }
}

/** What the stream said while a first page was being read, applied on top of it once it is in. */
const heardWhileReading = new Set<TenantEvent[]>();

/** One tenant event applied to the list. */
function applyEvent(event: TenantEvent): void {
  if (event.event !== "deleted" && event.event !== "created" && event.event !== "updated") return;
  const others = list.sessions.filter((s) => s.id !== event.data.id);
  // Newest first: a session that changed moves to the top.
  list.sessions = event.event === "deleted" ? others : [event.data, ...others];
}

/** The tenant's events are being followed: not before the first follow, nor once they ended for good (a refused key). */
let followingSessions = false;

/** Whether the list follows the tenant's events; if not, followSessions starts again. */
export function isFollowingSessions(): boolean {
  return followingSessions;
}

/**
 * Follows the tenant's sessions as they are created, change and go, so the list stays current
 * without reloading (rows are what the listing reports, a moment after each write), and answers the
 * first page. Tenant events are not replayed, so the first page is read once the stream is open,
 * and again after each reconnect: nothing that changed before the stream opened is missed. When
 * the first connection fails the page is read anyway, to show the list while it reconnects.
 */
export function followSessions(): Promise<SessionInfo[]> {
  followingSessions = true;
  return new Promise((firstPage, failed) => {
    let read = false;
    const readFirstPage = () => {
      const page = loadSessions(false);
      // Only the first read is the caller's; a later one that fails leaves the list as it was.
      if (!read) page.then(firstPage, failed);
      else page.catch(() => undefined);
      read = true;
    };
    const onStatus = (status: "live" | "reconnecting") => {
      showConnection(els.sessionsStatus, status);
      if (status === "live" || !read) readFirstPage();
    };
    (async () => {
      for await (const event of client.watch({ onStatus })) {
        for (const heard of heardWhileReading) heard.push(event);
        applyEvent(event);
        renderSessions();
      }
    })().catch((error: unknown) => {
      followingSessions = false;
      if (read) showError(error);
      else failed(error);
    });
  });
}
