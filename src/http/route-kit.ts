import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, TypedResponse, ValidationTargets } from "hono";
import type { JSONParsed } from "hono/utils/types";
import type * as z from "zod";
import { zodDetails } from "../core/append";
import { SessionError } from "../core/errors";
import { assertParsedJson, assertProtoKeysKept } from "../core/json";
import { MAX_BODY_BYTES } from "../core/limits";
import type { SessionInfo } from "../core/session-schemas";
import type { ObjectCalls, SessionObject, SessionObjectStorage } from "../durable/internal";
import {
  DurableRepo,
  GENERATION_ID_HEADER,
  MAX_APPEND_BYTES,
  partlyApplied,
  REQUEST_ID_HEADER,
  refuseBody,
  SOCKET_TICKET_HEADER,
  STREAM_KEY_HEADER,
  STREAM_TENANT_HEADER,
} from "../durable/internal";
import type { AppEnv } from "./env";
import { ErrorEnvelope } from "./errors";

/*
 * What every route module shares: its app (invalid input is one `invalid_request`), the shapes
 * the OpenAPI document gives bodies and answers, and the caller's sessions.
 */

const TARGETS: Record<keyof ValidationTargets, string> = {
  json: "body",
  form: "form",
  query: "query",
  param: "path",
  header: "header",
  cookie: "cookie",
};

/**
 * A `format` outside the ones a schema lists (a query value, or a message entry's in a body): a
 * name, so a format that is not a string (null) is invalid input instead.
 */
function unknownFormat(error: z.ZodError, input: unknown): z.core.$ZodIssue | undefined {
  return error.issues.find(
    (issue) =>
      issue.path.at(-1) === "format" &&
      (issue.code === "invalid_value" ||
        (issue.code === "invalid_union" && issue.discriminator === "format")) &&
      typeof valueAt(input, issue.path) === "string",
  );
}

/** The value at `path` in parsed JSON (own keys only), if there is one. */
function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const key of path) {
    if (typeof at !== "object" || at === null || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at;
}

/**
 * A group of routes, mounted by `createApp` with `app.route("/", …)`. Invalid input is one
 * `invalid_request` (a body nested too deep included), but an unknown format is
 * `unsupported_format`.
 */
export function routes(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: async (result, c) => {
      if (result.success) {
        if (result.target !== "json") return;
        assertParsedJson(result.data, "the body");
        // Validation may have dropped `__proto__` keys: the text the body was parsed from tells.
        const text = await c.req.bodyCache.text;
        if (typeof text === "string") assertProtoKeysKept(text, result.data, "the body");
        return;
      }
      // The validator hands the hook the input it checked as `data`, which the hook's type names
      // only on success.
      const input = (result as { data?: unknown }).data;
      // A body too deep, or with a number too large, fails the same way whichever of its fields the
      // schema refused first.
      if (result.target === "json") assertParsedJson(input, "the body");
      const format = unknownFormat(result.error, input);
      if (format) {
        const path = format.path.map(String);
        // A discriminated union lists its values in `options`, which zod's issue type leaves out.
        const listed: readonly unknown[] =
          format.code === "invalid_value"
            ? format.values
            : ((format as { options?: unknown[] }).options ?? []);
        throw new SessionError("unsupported_format", `unknown format at ${path.join(".")}`, {
          path,
          formats: listed.filter((value) => typeof value === "string"),
        });
      }
      throw new SessionError(
        "invalid_request",
        `invalid ${TARGETS[result.target]}`,
        zodDetails(result.error),
      );
    },
  });
}

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

export const body = <T extends z.ZodType>(schema: T, required = true) => ({
  content: { "application/json": { schema } },
  required,
});

/** An error answer: the envelope, described by its code (and when it is answered). */
export const failure = (description: string) => json(ErrorEnvelope, description);

const WRONG_JURISDICTION =
  "wrong_jurisdiction: the tenant is pinned to a jurisdiction but its sessions are in another";

export const errors = {
  400: failure("invalid_request"),
  401: failure("unauthorized"),
  403: failure("forbidden: a read-only credential writing, or a request from another site"),
  404: failure("not_found"),
  409: failure(WRONG_JURISDICTION),
  429: failure("rate_limited (Retry-After)"),
  503: failure(
    "misconfigured (a setting of the service is invalid: API_KEYS, JWT settings, QUOTAS, TENANT_JURISDICTIONS, DIRECTORY_SHARDS or RECOVERY_WINDOW_SECONDS) or unavailable (try again after Retry-After)",
  ),
};

/** A body past the 32 MiB every JSON body is held to (body.ts). */
export const TOO_LARGE_BODY = `payload_too_large: the body is over ${MAX_BODY_BYTES / (1024 * 1024)} MiB`;

/**
 * What a route that takes a JSON body may answer before it runs (body.ts): a request not declared
 * `application/json` (an empty body too), or a body past its size.
 */
export const bodyErrors = {
  413: failure(TOO_LARGE_BODY),
  415: failure("unsupported_format: the request is not declared application/json"),
};

/** A route's own 409, beside the tenant's wrong_jurisdiction that every route may answer. */
export const conflict = (description: string) => failure(`${description}, or ${WRONG_JURISDICTION}`);

/** What a write that stores something may also answer: its body's errors, a quota it would pass. */
export const writeErrors = {
  ...errors,
  ...bodyErrors,
  413: failure(
    `${TOO_LARGE_BODY}, or quota_exceeded: the write would pass one of the tenant's quotas; nothing written`,
  ),
  507: failure("session_full: the session's storage reached its ceiling; nothing written"),
};

/** The caller's sessions. */
export function repo(c: Context<AppEnv>): DurableRepo {
  return new DurableRepo(c.env, c.get("caller").tenant);
}

/** One of the caller's sessions (each call on it checks that it exists); the request's log names it. */
export function sessionStorage(c: Context<AppEnv>, sid: string): SessionObjectStorage {
  c.set("sessionId", sid);
  return repo(c).storage(sid);
}

/** The object of one of the caller's sessions, called directly (see `DurableRepo.object`); the log names it. */
export function sessionObject(c: Context<AppEnv>, sid: string): ObjectCalls<SessionObject> {
  c.set("sessionId", sid);
  return repo(c).object(sid);
}

/** The stub of one of the caller's sessions' object: for what it answers as a request; the log names it. */
export function sessionStub(c: Context<AppEnv>, sid: string): DurableObjectStub<SessionObject> {
  c.set("sessionId", sid);
  return repo(c).stub(sid);
}

/**
 * A call that follows a write the request has made (a rename's header change, an import's leaf
 * read): its failure answers that the outcome is unknown, never that nothing was applied.
 */
export async function afterWrite<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw partlyApplied(error);
  }
}

/** The info of a session the request has just written (a fork, an import): see `afterWrite`. */
export function writtenInfo(session: { getInfo(): Promise<SessionInfo> }): Promise<SessionInfo> {
  return afterWrite(() => session.getInfo());
}

/**
 * A JSON answer streamed as it is produced (long paths, large entries): typed as the JSON of
 * `schema`, which is what the stream carries, though Hono cannot see inside a stream.
 */
export function streamedJson<S extends z.ZodType>(
  _schema: S,
  body: ReadableStream<Uint8Array> | string,
  headers: Record<string, string> = {},
): Response & TypedResponse<JSONParsed<z.output<S>>, 200, "json"> {
  return new Response(body, {
    headers: { "Content-Type": "application/json; charset=utf-8", ...headers },
  }) as Response & TypedResponse<JSONParsed<z.output<S>>, 200, "json">;
}

/**
 * An NDJSON answer, streamed. Hono's route types read every `application/…json` media type as
 * JSON, and `application/x-ndjson` matches that pattern without being JSON, so the answer is typed
 * as the stream it is, outside their reach.
 */
export function ndjsonResponse(body: ReadableStream<Uint8Array>, filename: string): never {
  return new Response(body, {
    headers: {
      "Content-Type": "application/x-ndjson; charset=utf-8",
      "Content-Disposition": `attachment; filename="${filename}"`,
    },
  }) as never;
}

/** Refuses an append declared too large before an object sees it (the rest read and dropped: see refuseBody). */
export async function refuseLargeAppend(c: Context<AppEnv>): Promise<void> {
  const declared = c.req.header("Content-Length");
  if (declared !== undefined && Number(declared) > MAX_APPEND_BYTES) {
    await refuseBody(c.req.raw.body, MAX_APPEND_BYTES);
  }
}

/** The headers by which the router tells an object what it decided: a client's own are never passed on. */
const ROUTER_HEADERS = [
  REQUEST_ID_HEADER,
  GENERATION_ID_HEADER,
  STREAM_TENANT_HEADER,
  STREAM_KEY_HEADER,
  SOCKET_TICKET_HEADER,
];

/**
 * The client's request as an object's `fetch` is handed it: authenticated already, so without its
 * credential, and carrying the request's id and `told` (what the router decided) as the router's
 * headers, in place of any the client sent by those names.
 */
export function forObject(c: Context<AppEnv>, told: Readonly<Record<string, string>> = {}): Request {
  const headers = new Headers(c.req.raw.headers);
  headers.delete("Authorization");
  for (const name of ROUTER_HEADERS) headers.delete(name);
  headers.set(REQUEST_ID_HEADER, c.get("requestId"));
  for (const [name, value] of Object.entries(told)) headers.set(name, value);
  return new Request(c.req.raw, { headers });
}

/**
 * An object's answer, passed on: its error code goes into the request's log line, and its headers,
 * fixed, into a copy that later middleware (CORS, the request id) adds to.
 */
export async function passedOn(c: Context<AppEnv>, answer: Response): Promise<Response> {
  if (answer.status >= 400 && answer.headers.get("Content-Type") === "application/json") {
    const body = (await answer
      .clone()
      .json()
      .catch(() => undefined)) as { error?: { code?: string } } | undefined;
    if (body?.error?.code !== undefined) c.set("errorCode", body.error.code);
  }
  return new Response(answer.body, { status: answer.status, headers: new Headers(answer.headers) });
}
