import { act } from "./act";
import { installActions } from "./actions";
import { addressOf, readAddress } from "./address";
import { changeToken } from "./api-key";
import { select, showNoEntry } from "./entry-pane";
import { clearError, showError } from "./error-bar";
import { installStopButtons } from "./in-flight";
import { els } from "./page-elements";
import { followSessions, isFollowingSessions, loadSessions, renderSessions } from "./session-list";
import { installSearch } from "./session-search";
import { openSession, resumeSession } from "./session-view";
import { installTimeTravel } from "./time-travel";
import { installTreeEvents } from "./tree-view";
import { view } from "./view-state";

/*
 * The viewer's script: the session list, the tree of the open session, the context of the
 * selected entry and the actions on it. It talks to the /v1 API with the caller's own key.
 */

installTreeEvents(select);
installActions();
installSearch();
installStopButtons();
installTimeTravel();

window.addEventListener("hashchange", () => {
  const address = readAddress();
  if (address.session && address.session !== view.sessionId) void openSession(address.session, address.entry);
  else if (address.entry && address.entry !== view.selectedId) select(address.entry, { reveal: true });
});

els.sessionFilter.addEventListener("input", renderSessions);
els.sessionsMore.addEventListener("click", () => act(els.sessionsMore, () => loadSessions(true)));
els.sessionsRefresh.addEventListener("click", () => act(els.sessionsRefresh, () => loadSessions(false)));
els.errorDismiss.addEventListener("click", clearError);
els.tokenButton.addEventListener("click", async () => {
  if (await changeToken()) {
    await act(null, async () => {
      // A refused key ended the event streams for good: with the new one they start again.
      if (isFollowingSessions()) await loadSessions(false);
      else await followSessions();
      await resumeSession();
    });
  }
});

// Nothing fails silently: whatever escaped an action is still shown.
window.addEventListener("unhandledrejection", (event) => showError(event.reason));

async function start(): Promise<void> {
  const address = readAddress();
  if (address.session) void openSession(address.session, address.entry);
  else showNoEntry();
  try {
    const sessions = await followSessions();
    const [newest] = sessions;
    if (!address.session && !view.sessionId && newest) {
      history.replaceState(null, "", addressOf(newest.id));
      void openSession(newest.id);
    }
  } catch (error) {
    showError(error);
  }
}

void start();
