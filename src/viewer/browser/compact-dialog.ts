import { DEFAULT_KEEP_RECENT_TOKENS, prepareCompaction } from "../../core/compaction";
import { buildSessionContext } from "../../core/context";
import type { TreeEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import { estimateTokens } from "../../core/tokens";
import { readCompactionPath } from "./compaction-path";
import { count, showDialog } from "./dom";
import { kindName } from "./entry-text";
import { els } from "./page-elements";

/*
 * How much a compaction keeps, chosen before it runs. The dialog reads the current branch once (from
 * where its context starts: compaction-path.ts) and plans the compaction here, with the same rules
 * and token estimate the service uses, for each value the person tries: what would be summarized
 * and from which entry the branch is kept. When nothing would be dropped, Compact stays disabled
 * and says why.
 */

/** What the dialog shows for one value of keepRecentTokens. */
type Plan = { firstKeptEntryId: string; summarized: number; messages: number } | { nothing: string };

function plan(path: readonly TreeEntry[], keepRecentTokens: number): Plan {
  try {
    const prepared = prepareCompaction(path, { keepRecentTokens });
    const dropped = [...prepared.messagesToSummarize, ...prepared.turnPrefixMessages];
    return {
      firstKeptEntryId: prepared.firstKeptEntryId,
      summarized: dropped.reduce((sum, message) => sum + estimateTokens(message), 0),
      messages: dropped.length,
    };
  } catch (error) {
    if (error instanceof SessionError && error.code === "nothing_to_compact") {
      // The one reason a choice can change is said in the dialog's words; the others as they come.
      const fits = error.message.startsWith("nothing would be dropped");
      return { nothing: fits ? "the whole branch fits in what is kept" : error.message };
    }
    throw error;
  }
}

function describeEntry(path: readonly TreeEntry[], id: string): string {
  const entry = path.find((e) => e.id === id);
  if (!entry) return id;
  const kind = entry.type === "message" ? `${entry.message.role} message` : kindName(entry.type);
  return `${kind} ${id}`;
}

function showPlan(path: readonly TreeEntry[]): void {
  const keep = Number(els.compactKeep.value);
  const valid = els.compactKeep.value !== "" && Number.isInteger(keep) && keep >= 0;
  const planned = valid ? plan(path, keep) : { nothing: "Enter a whole number of tokens to keep." };
  const preview = els.compactPreview;
  if ("nothing" in planned) {
    preview.textContent = `Nothing would be dropped: ${planned.nothing}. Keep fewer tokens to compact.`;
    delete preview.dataset.firstKept;
    els.compactConfirm.disabled = true;
    return;
  }
  preview.textContent =
    `Summarizes ≈ ${count(planned.summarized, "token")} (${count(planned.messages, "message")}) and keeps ` +
    `the branch from ${describeEntry(path, planned.firstKeptEntryId)} on.`;
  preview.dataset.firstKept = planned.firstKeptEntryId;
  els.compactConfirm.disabled = false;
}

/**
 * Asks how many tokens to keep; resolves to the number chosen, or null when the person cancels.
 * Fails when the branch cannot be read.
 */
export async function chooseKeepTokens(sessionId: string): Promise<number | null> {
  const dialog = els.compactDialog;
  els.compactContext.textContent = "Reading the current branch…";
  els.compactPreview.textContent = "";
  els.compactConfirm.disabled = true;
  const closed = showDialog(dialog);
  const path = await readCompactionPath(sessionId).catch((error: unknown) => {
    dialog.close();
    throw error;
  });
  // Closed while the branch was read.
  if (!dialog.open) return null;
  // The estimate the context pane shows, and the one compaction counts what it keeps in.
  let tokens = 0;
  for (const message of buildSessionContext(path).messages) tokens += estimateTokens(message);
  els.compactContext.textContent = `The context at the leaf is ≈ ${count(tokens, "token")} (estimate).`;
  els.compactContext.dataset.tokens = String(tokens);
  const initial = Math.min(DEFAULT_KEEP_RECENT_TOKENS, Math.floor(tokens / 2));
  els.compactKeepRange.max = String(Math.max(tokens, 1));
  els.compactKeepRange.value = String(initial);
  els.compactKeep.value = String(initial);
  showPlan(path);
  // The slider and the number field: either one sets the other.
  const inputs = [els.compactKeepRange, els.compactKeep];
  const onInput = (event: Event) => {
    for (const input of inputs)
      if (input !== event.target) input.value = (event.target as HTMLInputElement).value;
    showPlan(path);
  };
  for (const input of inputs) input.addEventListener("input", onInput);
  els.compactKeep.focus();
  const returned = await closed;
  for (const input of inputs) input.removeEventListener("input", onInput);
  return returned === "ok" ? Number(els.compactKeep.value) : null;
}
