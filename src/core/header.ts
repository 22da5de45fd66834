import { SessionError } from "./errors";
import { checkHeaderPatch } from "./given-input";
import { checkSessionId, newId, nowIso } from "./ids";
import type { CreateSessionOptions, HeaderPatch, SessionHeader } from "./session-schemas";

/** The header of a new session, its id checked (ids become object names and file paths). */
export function newSessionHeader(
  options: CreateSessionOptions & { parentSession?: SessionHeader["parentSession"]; createdAt?: string },
) {
  const id = checkSessionId(options.id ?? newId());
  const header: SessionHeader = {
    id,
    createdAt: options.createdAt ?? nowIso(),
    metadata: options.metadata ?? {},
  };
  if (options.name !== undefined) header.name = options.name;
  if (options.systemPrompt !== undefined) header.systemPrompt = options.systemPrompt;
  if (options.parentSession) header.parentSession = options.parentSession;
  if (options.expiresAt !== undefined) header.expiresAt = options.expiresAt;
  return header;
}

/** The header after `patch`, which is checked as every backend checks it (`invalid_request`). */
export function patchHeader(header: SessionHeader, patch: HeaderPatch): SessionHeader {
  checkHeaderPatch(patch);
  const next: SessionHeader = { ...header };
  if (patch.systemPrompt === null) delete next.systemPrompt;
  else if (patch.systemPrompt !== undefined) next.systemPrompt = patch.systemPrompt;
  if (patch.metadata !== undefined) next.metadata = patch.metadata;
  if (patch.autoCompact === null) delete next.autoCompact;
  else if (patch.autoCompact !== undefined) next.autoCompact = patch.autoCompact;
  if (patch.expiresAt === null) delete next.expiresAt;
  else if (patch.expiresAt !== undefined) next.expiresAt = patch.expiresAt;
  return next;
}

/** An expiry given by a caller must lie ahead: one in the past would delete the session at once. */
export function checkExpiresAt(expiresAt: string | null | undefined, now = Date.now()): void {
  if (typeof expiresAt === "string" && Date.parse(expiresAt) <= now) {
    throw new SessionError("invalid_request", "expiresAt must be in the future", { expiresAt });
  }
}
