import { els } from "./page-elements";

/*
 * A fork's name, asked before it is made. Left empty, the fork keeps the source's name (the
 * service's rule), which the field shows as its placeholder.
 */

/** Resolves to the name typed (undefined when left empty), or null when the person cancels. */
export function chooseForkName(
  sourceName: string | undefined,
  entryId: string,
): Promise<string | undefined | null> {
  const dialog = els.forkDialog;
  els.forkFrom.textContent = `A new session holding the path to ${entryId}.`;
  els.forkName.value = "";
  els.forkName.placeholder = sourceName ?? "";
  dialog.returnValue = "";
  dialog.showModal();
  els.forkName.focus();
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        const name = els.forkName.value.trim();
        if (dialog.returnValue !== "ok") resolve(null);
        else resolve(name === "" ? undefined : name);
      },
      { once: true },
    );
  });
}
