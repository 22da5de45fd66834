import type { Position } from "./offsets";
import type { Expiry } from "./protocol";

/*
 * What a stream host needs from the streams its forks read: a fork's source may live in another
 * object (each stream its own object) or beside it (streams hosted in a session's object). The
 * source side answers with `Result`s: these calls may cross Durable Object RPC, which drops error
 * classes.
 */

/** What a fork asks of its source when it is made. */
export interface ForkPointRequest {
  /** The offset to fork at; absent: the source's tail. */
  offset: string | null;
  subOffset: number;
  /** The fork's content type, when its creator gave one: it must be the source's. */
  contentType: string | null;
  /** What the source counts the fork by: once, however often it is asked. */
  token: string;
}

/** Where a fork branches off, as its source answers (having counted the fork as one of its readers). */
export interface ForkPoint {
  contentType: string;
  /** The source's expiry, which a fork that sets none inherits. */
  expiry: Expiry;
  /** The offset forked at, as the fork records it (the source's tail when none was given). */
  offset: string;
  /** Records before this position are read from the source. */
  inherited: Position;
  /** Data the fork keeps as its own first records: the part of an append a sub-offset cut into. */
  materialized: Uint8Array[];
  /** The fork's depth: its source's, and one. */
  depth: number;
}

/**
 * Consecutive records of a stream as a reader gets them (from its own rows or across RPC from a
 * fork's source): where they begin and end, and their bytes in pieces, each piece whole records
 * (in a JSON stream, messages joined by commas).
 */
export interface RecordPage {
  /** The number of the first record. */
  first: number;
  /** Bytes of the stream before the first record. */
  start: number;
  /** The position after the last record. */
  end: Position;
  /** The end of the first record's append, as a record number, never past what the reader may see. */
  batchEnd: number;
  pieces: Uint8Array[];
}

/**
 * An append read whole for a backup (from a stream's own rows or across RPC from a fork's source):
 * its records' bytes (in a JSON stream, messages joined by commas) and how many records it holds.
 */
export interface AppendData {
  data: Uint8Array;
  records: number;
}

export interface StreamSources {
  /** The key of the stream a `Stream-Forked-From` path names; `invalid_request` if it names none. */
  keyOf(path: string): string;
  /** Validates a fork of `key` and counts it among the source's forks (by its token, once). */
  forkPoint(key: string, request: ForkPointRequest): Promise<ForkPoint>;
  /** Records of `key` from `from` on, before `until`, up to about `maxBytes` (at least one); null: none. */
  read(key: string, from: number, until: number, maxBytes: number): Promise<RecordPage | null>;
  /**
   * Appends of `key` from record `from` (where one starts) on, before `until` (an append it cuts
   * ends there), up to about `maxBytes` (at least one); none past `until`.
   */
  appends(key: string, from: number, until: number, maxBytes: number): Promise<AppendData[]>;
  /**
   * The fork of `key` counted by `token` is gone, or was never made: counted off once, however
   * often it is told (null: a fork made before tokens).
   */
  release(key: string, token: string | null): Promise<void>;
}
