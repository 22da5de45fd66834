import type { MiddlewareHandler } from "hono";
import { SessionError } from "../core/errors";
import type { AppEnv } from "./env";

/*
 * A request's path as the routes read it: each segment percent-decoded once, the same guarded way
 * everywhere. A segment that is not valid percent-encoding (`%ZZ`, a lone `%`, bytes that are not
 * UTF-8) is the caller's mistake, refused before any route or object sees it.
 */

/** A path segment, percent-decoded; `invalid_request` when it is not valid percent-encoding. */
export function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SessionError("invalid_request", "the path is not valid percent-encoding");
  }
}

/** Refuses a request whose path has a segment that does not decode. */
export const wellFormedPath: MiddlewareHandler<AppEnv> = async (c, next) => {
  for (const segment of new URL(c.req.url).pathname.split("/")) decodedSegment(segment);
  return next();
};
