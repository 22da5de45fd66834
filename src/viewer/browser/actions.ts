import { act } from "./act";
import { navigate } from "./address";
import { session } from "./api";
import { chooseKeepTokens } from "./compact-dialog";
import { count, h } from "./dom";
import { select } from "./entry-pane";
import { chooseForkName } from "./fork-dialog";
import { els } from "./page-elements";
import { noteWritten, refreshSession } from "./session-view";
import { list, view } from "./view-state";

/* What the page writes: move the leaf, fork, set or clear a label, compact. */

/** The open session and its selected entry, which every action here starts from. */
function selection(): { sessionId: string; entryId: string } {
  const { sessionId, selectedId } = view;
  if (!sessionId || !selectedId) throw new Error("select an entry first");
  return { sessionId, entryId: selectedId };
}

function writeLabel(label: string, button: HTMLButtonElement | null): Promise<void> {
  return act(button, async () => {
    const { sessionId, entryId } = selection();
    // A label entry without a label (or a blank one) clears it.
    const written = await session(sessionId).appendEntry(
      label ? { type: "label", targetId: entryId, label } : { type: "label", targetId: entryId },
    );
    noteWritten(written);
    els.labelInput.blur();
    await refreshSession();
  });
}

export function installActions(): void {
  els.moveLeafButton.addEventListener("click", () =>
    act(els.moveLeafButton, async () => {
      const { sessionId, entryId } = selection();
      noteWritten(await session(sessionId).setLeafId(entryId));
      await refreshSession();
    }),
  );

  els.forkButton.addEventListener("click", () =>
    act(els.forkButton, async () => {
      const { sessionId, entryId } = selection();
      const name = await chooseForkName(view.info?.name, entryId);
      if (name === null) return;
      const fork = await (
        await session(sessionId).fork(entryId, name === undefined ? {} : { name })
      ).getInfo();
      // Listed at once, before the listing catches up; once, should the tenant's event have listed it.
      list.sessions = [fork, ...list.sessions.filter((listed) => listed.id !== fork.id)];
      navigate(fork.id, fork.leafId);
    }),
  );

  els.labelForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const button = event.submitter instanceof HTMLButtonElement ? event.submitter : null;
    void writeLabel(els.labelInput.value.trim(), button);
  });
  els.labelClear.addEventListener("click", () => writeLabel("", els.labelClear));

  // The button's state follows the session (see session-view.ts), so the action leaves it alone.
  els.compactButton.addEventListener("click", () =>
    act(null, async () => {
      const sessionId = view.sessionId;
      if (!sessionId) return;
      const keepRecentTokens = await chooseKeepTokens(sessionId);
      if (keepRecentTokens === null) return;
      els.compactionNotice.hidden = true;
      const entry = await session(sessionId).compact({ keepRecentTokens });
      noteWritten(entry);
      els.compactionNotice.replaceChildren(
        h("button", {
          type: "button",
          class: "notice-dismiss",
          text: "Dismiss",
          onclick: () => {
            els.compactionNotice.hidden = true;
          },
        }),
        h("h3", {
          text: `Compacted: ≈ ${count(entry.tokensBefore || 0, "token")} before, kept from ${entry.firstKeptEntryId || "the start"}`,
        }),
        h("div", { class: "compaction-summary", text: entry.summary }),
      );
      els.compactionNotice.hidden = false;
      await refreshSession();
      select(entry.id, { reveal: true });
    }),
  );
}
