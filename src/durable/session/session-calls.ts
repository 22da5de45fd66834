import type { Result } from "../../core/errors";
import { capture, SessionError } from "../../core/errors";
import type { ObjectAlarm } from "../object-alarm";
import { storageWork } from "../transient";
import type { EntryPage } from "../types";
import type { DirectoryReports } from "./directory-reports";
import type { ForkCopy } from "./fork-copy";
import type { SessionLifecycle } from "./lifecycle";
import type { QuotaChecks } from "./quota-checks";
import type { ByteLimit } from "./room";
import type { SessionBlobs } from "./session-blobs";
import type { SessionStore } from "./session-store";

/*
 * How a call of the object reaches its session: which calls find it (a listed session, or one
 * being built by its builder's calls only), the store's work run as storage work with its failure
 * answered as a `Result`, and what follows a write (the directory hears of it, a large batch is
 * indexed for search just after) and bounds it (the session's room under its quotas).
 */

/** What the calls use of the object. */
export interface CallsHost {
  session: SessionStore;
  lifecycle: SessionLifecycle;
  blobs: SessionBlobs;
  quotas: QuotaChecks;
  /** A fork's copy: calls that need entries still to copy wait for them. */
  copy: ForkCopy;
  /** The directory's reports, made after the calls that use them. */
  reports: () => DirectoryReports;
  alarm: ObjectAlarm;
}

export class SessionCalls {
  readonly #host: CallsHost;

  constructor(host: CallsHost) {
    this.#host = host;
  }

  /** Whether the session is there for its routes: created, complete, and not deleted. */
  get listed(): boolean {
    return this.#host.session.exists && !this.#host.lifecycle.deleted && !this.#host.lifecycle.pending;
  }

  /**
   * A deleted session is not found by any read or write (until it is restored), nor is one a fork
   * or an import is still writing, but by the calls of its builder (`builder`: the token it was
   * created with), which find no other session.
   */
  checkListed(builder?: string): void {
    const { deleted, pending } = this.#host.lifecycle;
    const found =
      builder === undefined ? !pending : pending && this.#host.session.state.incarnation === builder;
    if (deleted || !found) throw new SessionError("not_found", "session does not exist");
  }

  /**
   * Runs `call` (which answers a Result), as if a fork's copy were complete: should it need entries
   * still to copy, it runs again once the object knows of them (see fork-copy.ts).
   */
  copied<T>(call: () => Promise<Result<T>>): Promise<Result<T>> {
    return this.#host.copy.retrying(call);
  }

  run<T>(read: (session: SessionStore) => T, builder?: string): Promise<Result<T>> {
    return this.copied(() =>
      capture(() => {
        this.checkListed(builder);
        return storageWork(() => read(this.#host.session));
      }),
    );
  }

  /** A read of entries, answered with their blobs' values in place of references. */
  runFilled(read: (session: SessionStore) => EntryPage): Promise<Result<EntryPage>> {
    return this.copied(() =>
      capture(async () => {
        this.checkListed();
        const page = storageWork(() => read(this.#host.session));
        return { ...page, entries: await this.#host.blobs.fill(page.entries) };
      }),
    );
  }

  /** Runs a write, then makes sure the directory will hear of it (and search index it). */
  write<T>(write: (session: SessionStore) => T, builder?: string): Promise<Result<T>> {
    return this.copied(() =>
      capture(() => {
        this.checkListed(builder);
        const result = storageWork(() => write(this.#host.session));
        this.#host.reports().schedule();
        // A large batch is indexed for search just after (see SearchIndex.index).
        if (this.#host.session.writes.searchBackfillPending)
          this.#host.alarm.armSoon("schedule_search_indexing");
        return result;
      }),
    );
  }

  /**
   * A write that stores bytes and waits on the way (a generation's chunks, through the stream
   * protocol): within the session's room as `limitedWrite`; the directory hears of it.
   */
  limitedStore<T>(write: (room: ByteLimit | undefined) => Promise<T>): Promise<Result<T>> {
    return this.#host.quotas.within(this.#host.session, (room) =>
      capture(async () => {
        this.checkListed();
        const result = await write(room);
        this.#host.reports().schedule();
        return result;
      }),
    );
  }

  /** A write that stores bytes: within the session's room (its quotas), growing it when it may. */
  limitedWrite<T>(
    write: (session: SessionStore, room: ByteLimit | undefined) => T,
    builder?: string,
  ): Promise<Result<T>> {
    return this.#host.quotas.within(this.#host.session, (room) =>
      this.write((session) => write(session, room), builder),
    );
  }
}
