/*
 * The address keeps the session and entry (#session=…&entry=…), so a view can be linked and
 * reloaded.
 */

export function readAddress(): { session: string | null; entry: string | null } {
  const params = new URLSearchParams(location.hash.slice(1));
  return { session: params.get("session"), entry: params.get("entry") };
}

export function addressOf(sessionId: string | null, entryId?: string | null): string {
  const params = new URLSearchParams();
  if (sessionId) params.set("session", sessionId);
  if (entryId) params.set("entry", entryId);
  return `#${params.toString()}`;
}

/** Opens a session (and entry) through the address, so the browser's history has it. */
export function navigate(sessionId: string, entryId?: string | null): void {
  location.hash = addressOf(sessionId, entryId);
}
