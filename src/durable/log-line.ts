import { sha256Hex } from "../core/bytes";
import { SessionError } from "../core/errors";

/*
 * Log lines: one JSON object a line through the console, which Workers Logs indexes field by
 * field. Nothing secret goes in: a tenant appears only as an opaque hash (never its name, key or
 * token), and no header, query string, body or message content is ever logged; error messages
 * are logged with their quoted parts cut out, since a runtime error may quote the data it choked on.
 */

/**
 * The header that carries a request's id: the caller's, echoed on its answer, and the one the
 * Worker hands an object with the request it passes on, so the object's log lines name it too.
 */
export const REQUEST_ID_HEADER = "x-request-id";

/** A field's value: a scalar, or records of scalars (the tool calls of an MCP batch, each apart). */
export type LogValue =
  | string
  | number
  | boolean
  | null
  | readonly Record<string, string | number | boolean | null>[];
export type LogFields = Record<string, LogValue | undefined>;

/** Writes one line: `error` lines for failures, `info` for the rest. */
export function logLine(fields: LogFields, level: "info" | "error" = "info"): void {
  const line = JSON.stringify(fields);
  if (level === "error") console.error(line);
  else console.log(line);
}

const HASH_CACHE_SIZE = 1000;
const hashes = new Map<string, string>();

/**
 * A tenant as logs and metrics name it: the first 16 hex digits of SHA-256("tenant:" + tenant).
 * An operator finds a tenant's lines by computing its hash; a reader of the logs learns nothing
 * about the tenant from it.
 */
export async function tenantHash(tenant: string): Promise<string> {
  const known = hashes.get(tenant);
  if (known !== undefined) return known;
  const hash = (await sha256Hex(`tenant:${tenant}`)).slice(0, 16);
  if (hashes.size >= HASH_CACHE_SIZE) hashes.clear();
  hashes.set(tenant, hash);
  return hash;
}

const QUOTED = /"[^"]*"|'[^']*'|`[^`]*`/g;
const MAX_ERROR_CHARS = 300;

/** An error as a log line may carry it: its name and message, quoted parts replaced, cut short. */
export function errorSummary(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(QUOTED, "…").slice(0, MAX_ERROR_CHARS);
}

/** Work the object does on its own (reports, compaction, …) failed: one line to find it by. */
export async function logBackgroundFailure(
  task: string,
  tenant: string,
  sessionId: string | undefined,
  error: unknown,
  fields: LogFields = {},
): Promise<void> {
  logLine(
    {
      type: "background",
      task,
      tenant: await tenantHash(tenant),
      sessionId: sessionId ?? null,
      errorCode: error instanceof SessionError ? error.code : "internal",
      error: errorSummary(error),
      ...fields,
    },
    "error",
  );
}
