import { describeError } from "./api";
import { els } from "./page-elements";

/** Shows a failure in words; `doing` says what was being attempted when that is not obvious. */
export function showError(error: unknown, doing?: string): void {
  const text = describeError(error);
  els.errorText.textContent = doing ? `${doing}: ${text}` : text;
  els.error.hidden = false;
}

export function clearError(): void {
  els.error.hidden = true;
  els.errorText.textContent = "";
}
