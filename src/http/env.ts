import type { DurableEnv } from "../durable/internal";
import type { Caller } from "./access";

export interface WorkerEnv extends DurableEnv {
  /**
   * Which requests get a log line: `all` (unset: the default, as deployed) or `errors` (answers of
   * 400 and up). `npm start` logs errors only: in local workerd every console line costs the request
   * milliseconds, which deployed Workers Logs does not.
   */
  REQUEST_LOG?: string;
  /** Cloudflare's rate-limiting binding: requests per tenant and window (see wrangler.toml). */
  RATE_LIMITER?: RateLimit;
  /** The window of RATE_LIMITER in seconds (10 or 60, as configured there), for Retry-After. */
  RATE_LIMIT_PERIOD_SECONDS?: string;
  /** Rate-limiting binding: requests failing authentication per client address and window. */
  AUTH_FAILURE_LIMITER?: RateLimit;
  /** The window of AUTH_FAILURE_LIMITER in seconds (10 or 60), for Retry-After. */
  AUTH_FAILURE_LIMIT_PERIOD_SECONDS?: string;
  /** Secret: JSON map of SHA-256 (hex) of each API key to its tenant (see docs/security.md). */
  API_KEYS?: string;
  /** Local development only (set by `npm start`): the tenant of loopback requests without a key. */
  DEV_TENANT?: string;
  /** Origins (`https://app.example.com`, comma-separated) whose pages may call /v1 (CORS). */
  CORS_ALLOWED_ORIGINS?: string;
  /** Secret: shared secret (UTF-8, at least 32 bytes) that verifies HS256 JWTs; unset, HS256 is refused. */
  JWT_SECRET?: string;
  /**
   * Secret (UTF-8, at least 32 bytes, not JWT_SECRET) that seals WebSocket tickets; unset, tickets
   * are refused, but in local development (DEV_TENANT), where each isolate makes up a key.
   */
  SOCKET_TICKET_SECRET?: string;
  /** Inline JWKS (`{"keys": [...]}`) whose RSA and P-256 public keys verify RS256 and ES256 JWTs. */
  JWT_JWKS?: string;
  /** https URL of a JWKS verifying RS256 and ES256 JWTs, cached per isolate for five minutes. */
  JWT_JWKS_URL?: string;
  /** When set, a JWT's `aud` (string or array) must contain this value. */
  JWT_AUDIENCE?: string;
  /** When set, a JWT's `iss` must equal this value. */
  JWT_ISSUER?: string;
  /** Seconds of clock difference tolerated for `exp`, `nbf` and `iat` (default 60). */
  JWT_CLOCK_SKEW_SECONDS?: string;
  /** JWT claim naming the tenant, a dotted path into nested claims allowed (default "tenant"). */
  JWT_TENANT_CLAIM?: string;
  /** JWT claim giving the caller's access, "read" or "write" (default "access"; absent: write). */
  JWT_ACCESS_CLAIM?: string;
}

/** What a request carries through the app: its caller, and what its log line reports. */
export interface RequestVariables {
  caller: Caller;
  /** The caller's `x-request-id` when valid, else one made up; on every answer and error. */
  requestId: string;
  /** The ticket a WebSocket upgrade was authenticated with: the object uses it up on accepting. */
  socketTicket?: string;
  /** The session the request is about, when there is one. */
  sessionId?: string;
  /** Bytes of the body, once read (else the log takes its declared Content-Length). */
  bytesIn?: number;
  /** The MCP tools the request called, each with what its log names. */
  toolCalls?: ToolCall[];
  /** The error code the request was answered with. */
  errorCode?: string;
  /** What went wrong inside, for an `internal` answer (never sent to the caller). */
  failure?: string;
}

/**
 * One MCP tool call, as the request's log line names it: a batch holds several, each about its own
 * session and each answered with its own error code.
 */
export type ToolCall = {
  /** The JSON-RPC id of the call's message. */
  id: string | number;
  tool: string;
  sessionId: string | null;
  errorCode: string | null;
};

export type AppEnv = { Bindings: WorkerEnv; Variables: RequestVariables };
