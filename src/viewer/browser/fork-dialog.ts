import { showDialog } from "./dom";
import { els } from "./page-elements";

/*
 * A fork's name, asked before it is made. Left empty, the fork keeps the source's name (the
 * service's rule), which the field shows as its placeholder.
 */

/** Resolves to the name typed (undefined when left empty), or null when the person cancels. */
export async function chooseForkName(
  sourceName: string | undefined,
  entryId: string,
): Promise<string | undefined | null> {
  els.forkFrom.textContent = `A new session holding the path to ${entryId}.`;
  els.forkName.value = "";
  els.forkName.placeholder = sourceName ?? "";
  const closed = showDialog(els.forkDialog);
  els.forkName.focus();
  if ((await closed) !== "ok") return null;
  return els.forkName.value.trim() || undefined;
}
