import { createClient, RemoteSession } from "../../client";
import { SessionError } from "../../core/errors";
import { fetchWithKey } from "./api-key";

/*
 * The service as the page reaches it: the library's own client on the page's origin, with the
 * caller's key, and its errors in words.
 */

export const client = createClient({ baseUrl: location.origin, fetch: fetchWithKey });

export function session(id: string): RemoteSession {
  return new RemoteSession(client.storage(id));
}

// How many of an invalid request's issues are listed; the rest are rarely news.
const ISSUES_SHOWN = 3;

/** A failure as shown to the person using the page: code, message, status, and what was invalid. */
export function describeError(error: unknown): string {
  if (!(error instanceof SessionError))
    return `error: ${error instanceof Error ? error.message : String(error)}`;
  // The HTTP status the service answered: the code's, unless no error envelope came with it.
  const status = (error.details as { status?: unknown } | undefined)?.status;
  let text = `${error.code}: ${error.message} (HTTP ${typeof status === "number" ? status : error.status})`;
  if (error.code === "unauthorized") text += ". Use “API token…” to enter a key.";
  const issues: { path?: unknown; message?: unknown }[] = Array.isArray(error.details) ? error.details : [];
  for (const issue of issues.slice(0, ISSUES_SHOWN)) {
    if (!issue?.message) continue;
    const path = Array.isArray(issue.path) && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    text += `\n• ${path}${String(issue.message)}`;
  }
  return text;
}
