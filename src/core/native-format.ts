import * as z from "zod";
import type { ImportedSession, ImportHeader } from "./interchange";
import { checkImportEntries, leafAfter, sessionEntries } from "./interchange";
import type { NumberedLine } from "./ndjson";
import { lineError, ndjsonLines, parseLine } from "./ndjson";
import type { Session } from "./session";
import {
  ExpiresAt,
  GivenMetadata,
  GivenName,
  GivenSystemPrompt,
  type Metadata,
  SessionHeader,
} from "./session-schemas";

/*
 * The native interchange format: a header line, then every entry in append order (`leaf` records
 * included), so an export imported again is the same session: ids, parents, timestamps, seq
 * order, leaf, labels, name, metadata and context.
 */

export const NATIVE_FORMAT = "cf-session";
export const NATIVE_VERSION = 1;

const NativeHeader = SessionHeader.omit({ autoCompact: true }).extend({
  type: z.literal("session"),
  format: z.literal(NATIVE_FORMAT),
  version: z.literal(NATIVE_VERSION),
  name: GivenName.optional(),
  systemPrompt: GivenSystemPrompt.optional(),
  metadata: GivenMetadata.optional(),
  expiresAt: ExpiresAt.optional(),
});

/** The export of a session as NDJSON lines (each ending in a newline), read page by page. */
export async function* exportNative(session: Session): AsyncGenerator<string> {
  const header = await session.getHeader();
  yield `${JSON.stringify({
    type: "session",
    format: NATIVE_FORMAT,
    version: NATIVE_VERSION,
    id: header.id,
    name: header.name,
    createdAt: header.createdAt,
    systemPrompt: header.systemPrompt,
    metadata: header.metadata,
    parentSession: header.parentSession,
    expiresAt: header.expiresAt,
  })}\n`;
  for await (const entry of sessionEntries(session)) yield `${JSON.stringify(entry)}\n`;
}

/** A native header line read as the header of the session it opens; `invalid_request` at its line otherwise. */
export function parseNativeHeader(line: NumberedLine): ImportHeader {
  const raw = parseLine(line);
  const parsed = NativeHeader.safeParse(raw);
  if (!parsed.success) {
    throw lineError(line.line, `not a ${NATIVE_FORMAT} version ${NATIVE_VERSION} header`, {
      issues: parsed.error.issues.map((i) => ({ path: i.path, message: i.message })),
    });
  }
  const { type: _type, format: _format, version: _version, ...header } = parsed.data;
  // Metadata as written: the schema would rebuild it, and drop a key named `__proto__` there.
  return { ...header, metadata: (raw.metadata as z.infer<typeof Metadata> | undefined) ?? {} };
}

export function parseNative(text: string): ImportedSession {
  const lines = ndjsonLines(text);
  const first = lines.next();
  if (first.done) throw lineError(1, "empty file: expected a session header");
  const header = parseNativeHeader(first.value);
  const raw: unknown[] = [];
  const numbers: number[] = [];
  for (const line of lines) {
    raw.push(parseLine(line));
    numbers.push(line.line);
  }
  const entries = checkImportEntries(raw, numbers);
  return { header, entries, leafId: leafAfter(entries), warnings: [] };
}
