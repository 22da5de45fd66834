import type { Context } from "hono";
import { SessionError } from "../core/errors";
import type { LocationHint } from "../core/location";
import type { ForkOptions, SessionInfo } from "../core/session-schemas";
import type { AppEnv } from "./env";
import { recordEvent } from "./metrics";
import { creationLocation } from "./placement";
import { sessionObject, sessionStorage } from "./route-kit";

/** Where a fork is made: an entry, else where the source's leaf stood at `asOf`, else its head. */
export interface ForkPoint {
  entryId?: string;
  asOf?: string;
}

/**
 * Forks one of the caller's sessions (over HTTP and over MCP alike): a new session holding the
 * path to the fork point, placed as the tenant's sessions are, and counted as a fork in the metrics.
 */
export async function forkSession(
  c: Context<AppEnv>,
  sourceId: string,
  at: ForkPoint,
  options: ForkOptions & { location?: LocationHint },
): Promise<SessionInfo> {
  const started = Date.now();
  const { location, ...fork } = options;
  const near = creationLocation(c, location);
  const source = sessionStorage(c, sourceId);
  const target = at.entryId ?? (await sessionObject(c, sourceId).leafAt(at.asOf)).leafId;
  if (target === null) {
    const when = at.asOf === undefined ? "" : ` at ${at.asOf}`;
    throw new SessionError("invalid_request", `the session held no entries${when}: nothing to fork`, {
      asOf: at.asOf ?? null,
    });
  }
  const info = await source.forkSession(target, { ...fork, location: near });
  await recordEvent(c, {
    kind: "fork",
    sessionId: info.id,
    sourceId,
    entries: info.entryCount,
    bytes: info.bytes,
    durationMs: Date.now() - started,
  });
  return info;
}
