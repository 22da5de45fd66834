import type { ImportedSession } from "./interchange";
import type { Session } from "./session";
import type { CreateSessionOptions, ForkOptions, ListOptions, SessionPage } from "./session-schemas";
import type { SyncResult } from "./sync-import";

/** Where a backend keeps its sessions: creating, opening, listing, forking, importing them. */
export interface SessionRepo {
  create(options?: CreateSessionOptions): Promise<Session>;
  /** Fails with `not_found` when there is no such session. */
  open(id: string): Promise<Session>;
  list(options?: ListOptions): Promise<SessionPage>;
  delete(id: string): Promise<void>;
  fork(id: string, targetId: string, options?: ForkOptions): Promise<Session>;
  /**
   * Writes a parsed import file (`parseNative`, `parsePi`) as a new session: the file's id unless
   * it is taken (then a new one), or `id`, which fails with `already_exists` if taken.
   */
  importSession(file: ImportedSession, options?: { id?: string }): Promise<Session>;
  /**
   * Writes a parsed import file into the session of its id (or `id`), to keep a copy of a file that
   * grows: creates the session when there is none, appends what the file gained since the last
   * sync, writes nothing when it gained nothing; a session that differs from the file is
   * `already_exists` and nothing is written (`syncImport`).
   */
  syncSession(file: ImportedSession, options?: { id?: string }): Promise<SyncResult>;
  cleanup(): Promise<void>;
}
