import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { SessionError } from "../../core/errors";
import {
  blobKey,
  dispositionFor,
  Jurisdiction,
  placedEnv,
  SERVED_BYTES_HEADERS,
  verifyBlobUrl,
} from "../../durable/internal";
import { failure, routes } from "../route-kit";

/*
 * A blob read through the short-lived URL a context with `?blobs=url` gave for it. The URL is the
 * credential (durable/blobs/blob-urls.ts says what it signs): no key is asked for, and whoever
 * holds it reads that one blob until it expires.
 */

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);

const BlobParams = z.object({
  tenantKey: Hex64.meta({ param: { name: "tenantKey", in: "path" } }),
  kind: z.enum(["b64", "txt"]).meta({ param: { name: "kind", in: "path" } }),
  sha256: Hex64.meta({ param: { name: "sha256", in: "path" } }),
});

const BlobQuery = z.object({
  jurisdiction: Jurisdiction.optional().meta({
    description:
      "where the blob is kept, as the URL names it: only the jurisdictions the service places data in",
  }),
  expires: z.coerce.number().int().positive(),
  signature: z.string().max(64),
});

export const blobRoutes = routes().openapi(
  createRoute({
    method: "get",
    path: "/v1/blobs/{tenantKey}/{kind}/{sha256}",
    operationId: "getBlob",
    summary: "A blob, through the signed URL a context gave for it",
    description:
      "The URLs of `GET …/context?blobs=url`: an image as itself (its media type; one a browser would run as a page, such as HTML or SVG, as a download), a tool output as UTF-8 text. 403 once expired or when the signature does not match; 404 when the blob is no longer stored.",
    // The signed URL is the credential: no key is asked for.
    security: [],
    request: { params: BlobParams, query: BlobQuery },
    responses: {
      200: { description: "the blob's bytes" },
      400: failure("invalid_request"),
      403: failure("forbidden: expired, or not signed by this service"),
      404: failure("not_found"),
    },
  }),
  async (c) => {
    const { tenantKey, kind, sha256 } = c.req.valid("param");
    const { jurisdiction, expires, signature } = c.req.valid("query");
    const secret = c.env.BLOB_URL_SECRET;
    const address = { jurisdiction, tenantKey, kind, sha256 };
    if (!secret || !(await verifyBlobUrl(secret, address, expires, signature))) {
      throw new SessionError("forbidden", "this blob URL is not one this service signed");
    }
    const remaining = expires - Math.floor(Date.now() / 1000);
    if (remaining <= 0) throw new SessionError("forbidden", "this blob URL has expired", { expires });
    const bucket = placedEnv(c.env, jurisdiction).BLOBS;
    const object = bucket ? await bucket.get(blobKey(tenantKey, { kind, sha256 })) : null;
    if (!object) throw new SessionError("not_found", "no such blob");
    const contentType = object.httpMetadata?.contentType ?? "application/octet-stream";
    return new Response(object.body, {
      headers: {
        "Content-Type": contentType,
        "Content-Length": String(object.size),
        "Cache-Control": `private, max-age=${remaining}`,
        ETag: `"${sha256}"`,
        ...SERVED_BYTES_HEADERS,
        ...dispositionFor(contentType),
      },
    }) as never;
  },
);
