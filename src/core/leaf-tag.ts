import { SessionError } from "./errors";

/*
 * A session's version on the wire is its leaf: `ETag: "<leafId>"` on answers, `If-Match` on
 * writes that must not cross a concurrent move (`""` for a session without a leaf).
 */

export function leafTag(leafId: string | null): string {
  return `"${leafId ?? ""}"`;
}

/** The leaf an `If-Match` expects: undefined when absent or `*`, null for `""`. */
export function expectedLeaf(header: string | undefined): string | null | undefined {
  if (header === undefined || header.trim() === "*") return undefined;
  const match = /^(?:W\/)?"([^"]*)"$/.exec(header.trim());
  if (!match) throw new SessionError("invalid_request", 'If-Match must be one quoted leaf id, e.g. "0193…"');
  return match[1] || null;
}
