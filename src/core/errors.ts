/** Every failure the library and the service report, with the HTTP status it maps to. */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  /** A stream's producer wrote with an epoch older than the producer's current one (fenced off). */
  stale_epoch: 403,
  not_found: 404,
  already_exists: 409,
  nothing_to_compact: 409,
  /**
   * The tenant's sessions are in another jurisdiction than the one it is now pinned to: moving a
   * tenant is an export and an import, never a side effect of a request.
   */
  wrong_jurisdiction: 409,
  /** An append to a stream that was closed: it takes no more data. */
  stream_closed: 409,
  /** An append whose content type is not the stream's (fixed when the stream was created). */
  content_type_mismatch: 409,
  /** A stream append out of order: `Stream-Seq` not above the last one, or a producer's sequence gap. */
  sequence_conflict: 409,
  /** A stream was deleted but its forks still read it: its path can not be used again, nor forked. */
  stream_deleted: 409,
  /** A stream that was deleted but is kept for the forks that read its data. */
  gone: 410,
  leaf_conflict: 412,
  entry_too_large: 413,
  payload_too_large: 413,
  /**
   * A write would take the tenant past one of its quotas (sessions, bytes of a session, bytes of
   * the tenant). 413 rather than 429: waiting does not help, so clients that retry 429s must not.
   */
  quota_exceeded: 413,
  unsupported_format: 415,
  parent_not_found: 422,
  invalid_tree: 422,
  rate_limited: 429,
  internal: 500,
  branch_summary_failed: 502,
  summarizer_failed: 502,
  /** The service's own configuration is invalid (e.g. API_KEYS); it refuses to serve until fixed. */
  misconfigured: 503,
  /**
   * Something the request needs cannot be reached for now (an object overloaded or restarting, a
   * storage operation that failed transiently). Nothing was written, unless `details.outcome` is
   * `"unknown"` (the object went away while the request ran: only a request that is safe to repeat
   * should be sent again). `Retry-After` says when to try again.
   */
  unavailable: 503,
  /**
   * The session's storage reached its ceiling (SESSION_FULL_BYTES, below the platform's limit per
   * object): it takes no more entries, and stays readable, exportable, compactable and forkable.
   */
  session_full: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The wire form of an error: what crosses RPC and HTTP. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

export class SessionError extends Error {
  readonly code: ErrorCode;
  readonly details?: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = "SessionError";
    this.code = code;
    if (details !== undefined) this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toJSON(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }

  static from(body: ErrorBody): SessionError {
    return new SessionError(body.code, body.message, body.details);
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_STATUS, value);
}

/**
 * The code an error status means when nothing more is said: an HTTP failure raised before the
 * service could say more (a body too large for its parser), or an error answer without the
 * service's error body (a proxy's or a firewall's page).
 */
export const CODE_OF_STATUS: Readonly<Record<number, ErrorCode>> = {
  400: "invalid_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  413: "payload_too_large",
  415: "unsupported_format",
  429: "rate_limited",
};

/**
 * Result of an operation that crosses a boundary which drops error classes (Durable Object RPC).
 * The caller turns a failure back into a `SessionError` with `unwrap`.
 */
export type Result<T> = { ok: true; value: T } | { ok: false; error: ErrorBody };

export async function capture<T>(run: () => T | Promise<T>): Promise<Result<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    if (error instanceof SessionError) return { ok: false, error: error.toJSON() };
    throw error;
  }
}

export function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.value;
  throw SessionError.from(result.error);
}
