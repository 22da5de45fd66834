import type { ErrorBody } from "../core/errors";
import { CODE_OF_STATUS, isErrorCode, SessionError } from "../core/errors";
import { tryParseJson, utf8Length } from "../core/json";
import { MAX_BODY_BYTES, MAX_TENANT_IMPORT_BYTES } from "../core/limits";
import { retryDelay, sleep } from "./backoff";

export interface ClientOptions {
  /** Where the service answers, e.g. `https://sessions.example.com` or `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** An API key (sent as `Authorization: Bearer <token>`); none for local development. */
  token?: string | undefined;
  /** A `fetch` to use instead of the global one: a service binding's, or a test's. */
  fetch?: ((input: Request) => Promise<Response>) | undefined;
  /** Tries for a request that may be retried (default 4). */
  maxAttempts?: number | undefined;
  /** First backoff in milliseconds, doubled on each retry, at most 30 s (default 200). */
  retryDelayMs?: number | undefined;
}

export interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** A body sent as is, with its own content type. */
  raw?: { body: NonNullable<RequestInit["body"]>; contentType: string };
  headers?: Record<string, string>;
  /**
   * Whether sending the request twice does no harm, so a failure that may have come after the
   * request was applied (the connection lost, a 503 whose `outcome` is `"unknown"`) is retried:
   * reads, appends whose entries carry ids, header patches, the retention setting. 429s, and 503s
   * that say nothing was applied, are retried whatever this says.
   */
  idempotent?: boolean;
  /** Aborts the request (and reading its answer). */
  signal?: AbortSignal;
}

const RETRY_STATUSES = new Set([429, 503]);
const MAX_RETRY_AFTER_MS = 60_000;

/** Milliseconds a `Retry-After` header asks for (seconds or an HTTP date), if any. */
export function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, seconds * 1000));
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.min(MAX_RETRY_AFTER_MS, Math.max(0, date - Date.now()));
}

/**
 * The service could not be reached at all (refused, no such host, the connection dropped): no
 * answer came, so there is no error code. Names the service's address so a wrong URL is plain.
 */
export class ConnectionError extends Error {
  readonly url: string;

  constructor(baseUrl: string, method: string, path: string, cause: unknown) {
    const reason =
      cause instanceof Error ? ((cause.cause as Error | undefined)?.message ?? cause.message) : String(cause);
    const where = `${method} /${path.replace(/^\//, "")}`;
    super(`cannot reach the service at ${baseUrl} (${where}: ${reason})`, { cause });
    this.name = "ConnectionError";
    this.url = baseUrl;
  }
}

/** JSON the service sent in a stream: anything else is no network hiccup, and retrying cannot mend it. */
export function serviceJson(text: string, notJson: string): unknown {
  const value = tryParseJson(text);
  if (value === undefined) throw new SessionError("internal", notJson, { data: text.slice(0, 200) });
  return value;
}

/**
 * An error answer without the service's error body (`{"error": {"code", …}}`): a proxy's or a
 * firewall's page, an edge's 429, a service failing before it could say. Its code is told from the
 * status alone (as the service would give it: `rate_limited` for 429, `not_found` for 404, …;
 * `internal` for another 5xx, `invalid_request` for another 4xx), so it says nothing of what was
 * sent: what sent it may try again.
 */
export class UnexplainedAnswerError extends SessionError {}

/**
 * Whether a failure ends a follower (a watch, a generation's reader) rather than have it reconnect.
 * Only what may pass is waited out: a lost connection, and an answer that says to try again (408,
 * 429, a 5xx) from the service or from anything between. Any other 4xx is the request's mistake,
 * with or without the service's error body, and so is `misconfigured` (the service refuses to
 * serve until its configuration is mended); anything else thrown is no answer at all (a request
 * that could not be made: a key no header can carry, a base URL that is not one).
 */
export function endsFollowing(error: unknown): boolean {
  if (error instanceof ConnectionError) return false;
  if (!(error instanceof SessionError)) return true;
  if (error.code === "misconfigured") return true;
  const status =
    error instanceof UnexplainedAnswerError ? (error.details as { status: number }).status : error.status;
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

async function errorOf(response: Response): Promise<SessionError> {
  const body = (await response.json().catch(() => undefined)) as { error?: Partial<ErrorBody> } | undefined;
  const error = body?.error;
  if (error && isErrorCode(error.code))
    return new SessionError(error.code, error.message ?? "", error.details);
  const code = CODE_OF_STATUS[response.status] ?? (response.status >= 500 ? "internal" : "invalid_request");
  return new UnexplainedAnswerError(code, `the service answered ${response.status}`, {
    status: response.status,
  });
}

/**
 * Whether a failed request was surely not applied: refused by the rate limit, or a 503 that says
 * so (`outcome: "not_applied"`; see `unavailable` in core/errors.ts). A 503 that does not say, from
 * the service or from anything between, may have been applied.
 */
function notApplied(status: number, error: SessionError): boolean {
  return status === 429 || (error.details as { outcome?: unknown } | undefined)?.outcome === "not_applied";
}

/** HTTP to the service: JSON in and out, errors as `SessionError`s, retries where they are safe. */
export class Transport {
  readonly #options: ClientOptions;
  readonly #fetch: (input: Request) => Promise<Response>;

  constructor(options: ClientOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? ((request) => fetch(request));
  }

  url(path: string, query: RequestOptions["query"] = {}): string {
    const url = new URL(
      path,
      this.#options.baseUrl.endsWith("/") ? this.#options.baseUrl : `${this.#options.baseUrl}/`,
    );
    for (const [key, value] of Object.entries(query))
      if (value !== undefined) url.searchParams.set(key, String(value));
    return url.toString();
  }

  /** The response of a successful request (2xx); a `SessionError` otherwise. */
  send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    return this.#exchange(method, path, options, async (response) => response);
  }

  /**
   * The JSON answer of a successful request. An answer whose body fails on the way (the service
   * streams long ones, and the connection or the object may go away while it does) is asked again
   * when asking twice does no harm, as a lost connection is; else it is a `ConnectionError`.
   */
  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.answer<T>(method, path, options)).body;
  }

  /** `json`, with the answer's status. */
  answer<T>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<{ status: number; body: T }> {
    return this.#exchange(method, path, options, async (response) =>
      response.status === 204
        ? { status: 204, body: undefined as T }
        : { status: response.status, body: (await response.json()) as T },
    );
  }

  /**
   * Sends a request and reads its successful answer with `read`, retrying where it is safe. A try
   * is one request, whether it failed sending or reading: `maxAttempts` counts them all, and the
   * backoff grows with each.
   */
  async #exchange<T>(
    method: string,
    path: string,
    options: RequestOptions,
    read: (response: Response) => Promise<T>,
  ): Promise<T> {
    const { attempts, baseDelay, idempotent } = this.#retries(method, options);
    for (let attempt = 1; ; attempt++) {
      const request = this.#request(method, path, options);
      let response: Response;
      try {
        response = await this.#fetch(request);
        if (response.ok) return await read(response);
      } catch (error) {
        // The request or its answer failed on the way. Cancelled by the caller: not a failure to
        // try again.
        if (options.signal?.aborted) throw options.signal.reason;
        if (!idempotent || attempt >= attempts)
          throw new ConnectionError(this.#options.baseUrl, method, path, error);
        await this.#wait(retryDelay(baseDelay, attempt), options.signal);
        continue;
      }
      const error = await errorOf(response);
      // A request that may have been applied (the object went away while it ran, or the answer
      // does not say) is sent again only if sending it twice does no harm.
      if (
        RETRY_STATUSES.has(response.status) &&
        attempt < attempts &&
        (idempotent || notApplied(response.status, error))
      ) {
        await this.#wait(
          retryAfterMs(response.headers.get("Retry-After")) ?? retryDelay(baseDelay, attempt),
          options.signal,
        );
        continue;
      }
      throw error;
    }
  }

  /** Waits before the next try; cancelled by the caller meanwhile, throws the signal's reason. */
  async #wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    await sleep(ms, signal);
    if (signal?.aborted) throw signal.reason;
  }

  /** How many times a request is tried, the first wait between tries, and whether a retry is safe. */
  #retries(method: string, options: RequestOptions) {
    return {
      attempts: this.#options.maxAttempts ?? 4,
      baseDelay: this.#options.retryDelayMs ?? 200,
      idempotent: options.idempotent ?? (method === "GET" || method === "HEAD"),
    };
  }

  /**
   * The request to send. A header a request cannot carry fails it before anything is sent, and its
   * error does not repeat the value, which may be the key.
   */
  #request(method: string, path: string, options: RequestOptions): Request {
    let headers: Headers;
    try {
      headers = new Headers(options.headers);
      if (this.#options.token) headers.set("Authorization", `Bearer ${this.#options.token}`);
    } catch {
      throw new TypeError(
        `${method} /${path.replace(/^\//, "")}: a header holds a character no header can carry (a line break, say); it is not sent`,
      );
    }
    let body: RequestInit["body"];
    if (options.raw) {
      body = options.raw.body;
      if (typeof body === "string") refuseOversized(method, path, body);
      headers.set("Content-Type", options.raw.contentType);
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      refuseOversized(method, path, body);
      headers.set("Content-Type", "application/json");
    }
    return new Request(this.url(path, options.query), { method, headers, body, signal: options.signal });
  }
}

/**
 * The most bytes of a body the service reads at `path` before it refuses one unread (its tenant
 * stream's route takes more; a route with a smaller limit reads the body first, then refuses it).
 */
function bodyLimitOf(path: string): number {
  return path.replace(/^\//, "").split("?")[0] === "v1/import" ? MAX_TENANT_IMPORT_BYTES : MAX_BODY_BYTES;
}

/**
 * A body past what the service takes is refused here, as the service would refuse it
 * (`payload_too_large`), and not sent: the service answers such a body before reading it, and a
 * connection whose upload was cut short can fail the next request sent on it.
 */
function refuseOversized(method: string, path: string, body: string): void {
  const limit = bodyLimitOf(path);
  // A character is at most 3 bytes of UTF-8 (a surrogate pair, two characters, is 4).
  if (body.length * 3 <= limit) return;
  const bytes = utf8Length(body);
  if (bytes <= limit) return;
  throw new SessionError(
    "payload_too_large",
    `${method} /${path.replace(/^\//, "")}: the body is ${bytes} bytes, over the ${limit / (1024 * 1024)} MiB the service takes; it is not sent`,
    { limit },
  );
}
