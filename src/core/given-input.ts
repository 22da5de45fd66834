import type { z } from "zod";
import { zodDetails } from "./append";
import { Id } from "./entries";
import { SessionError } from "./errors";
import { CreateSessionOptions, EntryQuery, ForkOptions, HeaderPatch } from "./session-schemas";

/*
 * What a caller gives a backend, checked against the schemas the HTTP API validates its requests
 * with: every backend (memory, JSONL files, a Durable Object, the service over HTTP) refuses the
 * same input alike, with `invalid_request` and the same issues, before anything is written.
 */

/** `value` when `schema` reads it; `invalid_request` naming what is wrong otherwise. */
function checkGiven<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new SessionError("invalid_request", `invalid ${what}`, zodDetails(parsed.error));
  return value as T;
}

/** The options of a new session (`repo.create`). */
export function checkCreateOptions(options: CreateSessionOptions): CreateSessionOptions {
  return checkGiven(CreateSessionOptions, options, "session options");
}

/** A change to a session's header (`updateHeader`): its name is a `session_info` entry, not a header change. */
export function checkHeaderPatch(patch: HeaderPatch): HeaderPatch {
  return checkGiven(HeaderPatch, patch, "header change");
}

/** The entry a fork is made at, and the fork's options. */
export function checkForkRequest(targetId: string, options: ForkOptions): void {
  checkGiven(Id, targetId, "entry id to fork at");
  checkGiven(ForkOptions, options, "fork options");
}

/** The entry types a page of entries is filtered by: at least one, each a known type. */
export function checkEntryTypes(type: EntryQuery["type"]): void {
  checkGiven(EntryQuery.shape.type, type, "entry type filter");
}
