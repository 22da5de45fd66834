import * as z from "zod";

/**
 * Where a new session's storage should preferably live: a Durable Object location hint. It only
 * counts when the session is first created (a fork and an import create one too); an existing
 * session stays where it is.
 */
export const LocationHint = z.enum(["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"]).meta({
  description:
    "where the new session's storage should live: western or eastern North America, South America, western or eastern Europe, Asia-Pacific, Oceania, Africa, the Middle East (default: near the request)",
});
export type LocationHint = z.infer<typeof LocationHint>;
