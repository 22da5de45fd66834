import { client } from "./api";
import { fullTime } from "./dom";
import { select, showNoEntry } from "./entry-pane";
import { showError } from "./error-bar";
import { els } from "./page-elements";
import { renderTree } from "./tree-view";
import { view } from "./view-state";

/*
 * The time slider of the open session: from the start of its leaf history to now. Moving it
 * selects the entry the head was on at that time (`GET …/leaf?asOf=`), marked "then" in the tree,
 * with its context shown as it always is for a selected entry; "Back to now" returns to the head.
 * It only looks: nothing is written until an action (move the leaf, fork) is chosen.
 */

/** Slider steps between the start of the history and now. */
const STEPS = 1000;
/** Quiet time after the slider last moved before the service is asked. */
const ASK_AFTER_MS = 150;

let askTimer: ReturnType<typeof setTimeout> | undefined;
/** Bumped at each ask: an answer for an earlier position is dropped. */
let asked = 0;

function showNow(): void {
  view.asOf = null;
  els.timeSlider.value = String(STEPS);
  els.timeLabel.textContent = "now";
  els.timeNow.hidden = true;
}

/** Hides the slider while another session opens. */
export function hideTimeTravel(): void {
  showNow();
  view.historyStartsAt = null;
  els.timeTravel.hidden = true;
}

/** Shows the slider for the session just opened, at now, over the span of its history. */
export async function showTimeTravel(sessionId: string): Promise<void> {
  const { historyStartsAt } = await client.storage(sessionId).leafAt();
  if (view.sessionId !== sessionId) return;
  view.historyStartsAt = Date.parse(historyStartsAt);
  els.timeTravel.hidden = false;
}

/** The time a slider position stands for: its share of the span from the history's start to now. */
function timeAt(position: number): string {
  const start = view.historyStartsAt ?? Date.now();
  const now = Date.now();
  return new Date(start + Math.round(((now - start) * position) / STEPS)).toISOString();
}

async function travel(position: number): Promise<void> {
  const sessionId = view.sessionId;
  if (!sessionId) return;
  const ask = ++asked;
  if (position >= STEPS) {
    showNow();
    renderTree();
    select(view.info?.leafId ?? null, { reveal: true });
    return;
  }
  const at = timeAt(position);
  const { leafId } = await client.storage(sessionId).leafAt(at);
  if (ask !== asked || view.sessionId !== sessionId) return;
  view.asOf = { at, leafId };
  els.timeLabel.textContent = `${fullTime(at)}${leafId === null ? " · no entries yet" : ""}`;
  els.timeNow.hidden = false;
  renderTree();
  if (leafId === null) showNoEntry();
  else select(leafId, { reveal: true });
}

export function installTimeTravel(): void {
  els.timeSlider.addEventListener("input", () => {
    clearTimeout(askTimer);
    const position = Number(els.timeSlider.value);
    askTimer = setTimeout(() => travel(position).catch(showError), ASK_AFTER_MS);
  });
  els.timeNow.addEventListener("click", () => {
    clearTimeout(askTimer);
    travel(STEPS).catch(showError);
  });
}
