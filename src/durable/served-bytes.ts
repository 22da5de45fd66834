/*
 * Bytes a tenant wrote (a blob, a stream's data), served from the service's own origin: never run
 * as a page there. A browser opening one gets it sandboxed, with no script, style or request of
 * its own, and a type that runs as a document (HTML, SVG, any XML) is a download rather than shown.
 */

export const SERVED_BYTES_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": "default-src 'none'; sandbox",
  "X-Content-Type-Options": "nosniff",
};

/** Media types a browser runs as a document: HTML and XML of any kind (XHTML, SVG, XSLT). */
const ACTIVE_TYPE = /^\s*(text\/html|text\/xml|application\/xml|[a-z0-9.+-]+\/[a-z0-9.-]+\+xml)\s*(;|$)/i;

/** `Content-Disposition: attachment` for a content type a browser would run as a document. */
export function dispositionFor(contentType: string): Record<string, string> {
  return ACTIVE_TYPE.test(contentType) ? { "Content-Disposition": "attachment" } : {};
}
