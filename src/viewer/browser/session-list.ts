import type { SessionInfo } from "../../core/session-schemas";
import { navigate } from "./address";
import { client } from "./api";
import { ago, count, fullTime, h, showConnection } from "./dom";
import { els } from "./page-elements";
import { list, view } from "./view-state";

/* The tenant's sessions, most recently updated first, a page at a time, filtered on the page. */

const SESSIONS_PAGE = 50;

export async function loadSessions(more: boolean): Promise<SessionInfo[]> {
  const page = await client.list({
    limit: SESSIONS_PAGE,
    order: "updated",
    cursor: more ? list.nextCursor : undefined,
  });
  list.sessions = more ? list.sessions.concat(page.sessions) : page.sessions;
  list.nextCursor = page.nextCursor;
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

/**
 * Follows the tenant's sessions as they are created, change and go, so the list stays current
 * without reloading (rows are what the listing reports, a moment after each write). Tenant events
 * are not replayed, so after a reconnect the first page is read again: nothing changed while the
 * connection was down is missed.
 */
export async function watchSessions(): Promise<void> {
  let reconnected = false;
  const onStatus = (status: "live" | "reconnecting") => {
    showConnection(els.sessionsStatus, status);
    if (status === "reconnecting") reconnected = true;
    else if (reconnected) {
      reconnected = false;
      loadSessions(false).catch(() => undefined);
    }
  };
  for await (const event of client.watch({ onStatus })) {
    if (event.event !== "deleted" && event.event !== "created" && event.event !== "updated") continue;
    const others = list.sessions.filter((s) => s.id !== event.data.id);
    // Newest first: a session that changed moves to the top.
    list.sessions = event.event === "deleted" ? others : [event.data, ...others];
    renderSessions();
  }
}
