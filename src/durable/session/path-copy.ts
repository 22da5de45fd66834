import type { Result } from "../../core/internal";
import { capture, unwrap } from "../../core/internal";
import type { DurableEnv } from "../env";
import { sessionObjectName } from "../names";
import type { CopiedRows } from "../types";
import type { QuotaChecks } from "./quota-checks";
import type { SessionBlobs } from "./session-blobs";
import type { SessionCalls } from "./session-calls";
import type { SessionStore } from "./session-store";

/*
 * The new session's side of a fork: its path's rows read from the source's object itself (its
 * `pathRows`, see fork-copy.ts for the source's side) and written here as stored, so the rows
 * cross once. A call copies for up to COPY_BUDGET_MS and answers the seqs left, so that no call
 * runs long however long the path.
 */

/** Milliseconds one call of a fork's copy spends copying pages before it answers with the rest. */
const COPY_BUDGET_MS = 1000;

/** What the copy uses of the object. */
export interface PathCopyHost {
  /** The environment of the objects it reaches: those of its own jurisdiction. */
  placed: DurableEnv;
  session: SessionStore;
  quotas: QuotaChecks;
  blobs: SessionBlobs;
  calls: SessionCalls;
}

export class PathCopy {
  readonly #host: PathCopyHost;

  constructor(host: PathCopyHost) {
    this.#host = host;
  }

  /** Copies `seqs` of the session `sourceId` of the same tenant into this one; answers the seqs left. */
  async copyFrom(sourceId: string, seqs: number[], builder?: string): Promise<Result<number[]>> {
    const tenant = await capture(() => this.#host.session.state.tenant);
    if (!tenant.ok) return tenant;
    const source = this.#host.placed.SESSIONS.getByName(sessionObjectName(tenant.value, sourceId));
    const started = Date.now();
    let rest = seqs;
    // A page that needs more room than granted stops, and is read again once it is granted.
    const copied = await this.#host.quotas.within(this.#host.session, (room) =>
      capture(async () => {
        while (rest.length > 0 && Date.now() - started < COPY_BUDGET_MS) {
          const page = unwrap((await source.pathRows(rest)) as Result<CopiedRows>);
          // The blobs the rows refer to are this session's too before the rows are.
          await this.#host.blobs.claimCopied(page.blobRefs);
          unwrap(await this.#host.calls.write((session) => session.writes.copyRows(page, room), builder));
          rest = page.rest;
        }
      }),
    );
    return copied.ok ? { ok: true, value: rest } : copied;
  }
}
