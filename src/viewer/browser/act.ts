import { updateEntryPane } from "./entry-pane";
import { clearError, showError } from "./error-bar";

/** Runs an action from a button: the button waits, and a failure is shown in words. */
export async function act(button: HTMLButtonElement | null, action: () => Promise<unknown>): Promise<void> {
  if (button) button.disabled = true;
  try {
    clearError();
    await action();
  } catch (error) {
    showError(error);
  } finally {
    if (button) button.disabled = false;
    updateEntryPane();
  }
}
