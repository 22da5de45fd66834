import type { CreateSessionOptions, Session, SessionInfo, SessionRepo } from "../core";
import { SessionError } from "../core";

/** Sessions kept open at most: a handle is small, and a process works on a few threads at a time. */
const KEPT_HANDLES = 1000;
/** Sessions per page when a whole tenant is read. */
const SCAN_PAGE = 200;

function isMissing(error: unknown): error is SessionError {
  return error instanceof SessionError && error.code === "not_found";
}

/** A `not_found` about the session itself, not about an entry of it. */
export function isMissingSession(error: unknown): boolean {
  return isMissing(error) && (error.details as { entryId?: string } | undefined)?.entryId === undefined;
}

/**
 * The sessions an adapter works on, opened once and kept, so that a write to a session already
 * seen is one call to its storage (one request to the service). A session is created by the first
 * write that finds it missing.
 */
export class SessionHandles {
  readonly repo: SessionRepo;
  readonly #open = new Map<string, Session>();

  constructor(repo: SessionRepo) {
    this.repo = repo;
  }

  #keep(session: Session): Session {
    this.#open.delete(session.id);
    this.#open.set(session.id, session);
    if (this.#open.size > KEPT_HANDLES) this.#open.delete(this.#open.keys().next().value as string);
    return session;
  }

  /** The session, or undefined when there is none. */
  async find(id: string): Promise<Session | undefined> {
    const kept = this.#open.get(id);
    if (kept) return kept;
    try {
      return this.#keep(await this.repo.open(id));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async #create(options: CreateSessionOptions & { id: string }): Promise<Session> {
    try {
      return this.#keep(await this.repo.create(options));
    } catch (error) {
      // Another writer created it first.
      if (error instanceof SessionError && error.code === "already_exists") {
        return this.#keep(await this.repo.open(options.id));
      }
      throw error;
    }
  }

  /**
   * Runs `write` on the session, creating it first (with `create`) when it does not exist. A
   * session deleted since it was opened is created again, as a write to a new thread would.
   */
  async write<T>(
    create: CreateSessionOptions & { id: string },
    write: (session: Session) => Promise<T>,
  ): Promise<T> {
    const session = (await this.find(create.id)) ?? (await this.#create(create));
    try {
      return await write(session);
    } catch (error) {
      if (!isMissingSession(error)) throw error;
      this.forget(create.id);
      return write(await this.#create(create));
    }
  }

  forget(id: string): void {
    this.#open.delete(id);
  }

  /** Deletes the session if it exists. */
  async delete(id: string): Promise<void> {
    this.forget(id);
    try {
      await this.repo.delete(id);
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }

  /**
   * The tenant's sessions whose id starts with `prefix`, read page by page in creation order (which
   * writes do not change, so no session is skipped or seen twice).
   */
  async *scan(prefix: string): AsyncGenerator<SessionInfo> {
    let cursor: string | null | undefined;
    do {
      const page = await this.repo.list({
        limit: SCAN_PAGE,
        cursor,
        order: "created",
        prefix: prefix || undefined,
      });
      for (const info of page.sessions) yield info;
      cursor = page.nextCursor;
    } while (cursor);
  }
}
