import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, TypedResponse, ValidationTargets } from "hono";
import type { JSONParsed } from "hono/utils/types";
import type * as z from "zod";
import { SessionError, zodDetails } from "../core";
import type { SessionObjectStorage } from "../durable";
import { DurableRepo } from "../durable";
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

/** A group of routes, mounted by `createApp` with `app.route("/", …)`. */
export function routes(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        throw new SessionError(
          "invalid_request",
          `invalid ${TARGETS[result.target]}`,
          zodDetails(result.error),
        );
      }
    },
  });
}

export const security = [{ bearer: [] }];

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

export const body = <T extends z.ZodType>(schema: T, required = true) => ({
  content: { "application/json": { schema } },
  required,
});

export const errors = {
  400: json(ErrorEnvelope, "invalid_request"),
  401: json(ErrorEnvelope, "unauthorized"),
  403: json(ErrorEnvelope, "forbidden: a read-only credential writing, or a request from another site"),
  404: json(ErrorEnvelope, "not_found"),
  429: json(ErrorEnvelope, "rate_limited (Retry-After)"),
  503: json(ErrorEnvelope, "misconfigured: the service's API_KEYS is invalid"),
};

/** The caller's sessions. */
export function repo(c: Context<AppEnv>): DurableRepo {
  return new DurableRepo(c.env, c.get("caller").tenant);
}

/** One of the caller's sessions (each call on it checks that it exists). */
export function sessionStorage(c: Context<AppEnv>, sid: string): SessionObjectStorage {
  return repo(c).storage(sid);
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
