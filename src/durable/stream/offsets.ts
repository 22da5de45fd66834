import { SessionError } from "../../core/errors";

/*
 * Where a reader stands in a stream. A stream is a sequence of records (a binary stream's appends,
 * a JSON stream's messages); a position is the number of records before it and the number of data
 * bytes before it. Its offset, the protocol's opaque token, writes both as sixteen decimal digits
 * (`0000000000000003_0000000000000042`): offsets of one stream sort as text in stream order, and a
 * read starts at the record the first number names, with no search.
 */

export interface Position {
  /** Records before this position. */
  readonly records: number;
  /** Bytes of data before this position. */
  readonly bytes: number;
}

export const START: Position = { records: 0, bytes: 0 };

const DIGITS = 16;
const OFFSET = /^(\d{16})_(\d{16})$/;

export function formatOffset(position: Position): string {
  return `${String(position.records).padStart(DIGITS, "0")}_${String(position.bytes).padStart(DIGITS, "0")}`;
}

/** What a reader asks for: a position, the stream's start (`-1`), or its tail as it is (`now`). */
export type OffsetRequest = { kind: "start" } | { kind: "now" } | { kind: "at"; position: Position };

/**
 * Reads an offset the way this service writes them; anything else is the caller's mistake (400).
 * Numbers past what a stream can hold are refused here, so they never meet arithmetic.
 */
export function parseOffset(text: string): Position {
  const match = OFFSET.exec(text);
  const records = Number(match?.[1]);
  const bytes = Number(match?.[2]);
  if (!match || !Number.isSafeInteger(records) || !Number.isSafeInteger(bytes)) {
    throw new SessionError("invalid_request", "not an offset of this stream", { offset: text });
  }
  return { records, bytes };
}

export function parseOffsetRequest(text: string): OffsetRequest {
  if (text === "-1") return { kind: "start" };
  if (text === "now") return { kind: "now" };
  return { kind: "at", position: parseOffset(text) };
}

export function samePosition(a: Position, b: Position): boolean {
  return a.records === b.records && a.bytes === b.bytes;
}
