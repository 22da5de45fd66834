import type { SessionEntry } from "../../core/entries";
import type { Result } from "../../core/errors";
import { capture } from "../../core/errors";
import type { AppendOptions, AppendResult, ImportOptions } from "../../core/storage";
import type { DurableEnv } from "../env";
import type { Building } from "../types";
import type { BlobPolicy, SessionBlobs } from "./session-blobs";
import type { SessionCalls } from "./session-calls";
import type { SessionStore } from "./session-store";
import type { SessionTelemetry } from "./session-telemetry";
import { checkNotFull } from "./storage-ceiling";

/*
 * Entries coming into the session, appended or imported: refused when the session is full (a
 * compaction excepted) before any of their blobs is uploaded; their values large enough stored as
 * blobs first under the router's policy (session-blobs.ts), then written within the session's
 * room. An append is counted in a metric, and answered with its entries' values in place of
 * references.
 */

/** What the intake uses of the object. */
export interface IntakeHost {
  sql: SqlStorage;
  /** The object's environment as it stands now (its storage ceiling). */
  env: () => DurableEnv;
  session: SessionStore;
  calls: SessionCalls;
  blobs: SessionBlobs;
  telemetry: SessionTelemetry;
}

export class EntryIntake {
  readonly #host: IntakeHost;

  constructor(host: IntakeHost) {
    this.#host = host;
  }

  async append(
    entries: readonly unknown[],
    options: AppendOptions & { validated?: boolean; blobs?: BlobPolicy } & Building,
  ): Promise<Result<AppendResult>> {
    const { blobs: policy, builder, ...appendOptions } = options;
    // A full session still takes a compaction: it is what keeps its context usable.
    const compaction = entries.every((entry) => (entry as { type?: unknown } | null)?.type === "compaction");
    const prepared = await capture(() => {
      this.#host.calls.checkListed(builder);
      // Refused before any of its blobs is uploaded.
      if (!compaction) checkNotFull(this.#host.sql, this.#host.env());
      return this.#host.blobs.prepare(entries, policy, (inputs, loaded) =>
        this.#host.session.writes.plannedAppend(inputs, appendOptions, loaded),
      );
    });
    if (!prepared.ok) return prepared;
    let written = { sessionId: "", entries: 0, bytes: 0 };
    const result = await this.#host.calls.limitedWrite((session, room) => {
      const { nextSeq, stats, header } = session.state;
      const before = { seq: nextSeq, bytes: stats.bytes };
      const answer = session.writes.appendEntries(entries, appendOptions, room, prepared.value);
      written = {
        sessionId: header.id,
        entries: session.state.nextSeq - before.seq,
        bytes: session.state.stats.bytes - before.bytes,
      };
      return answer;
    }, builder);
    if (written.entries > 0) await this.#host.telemetry.metric({ kind: "append", ...written });
    if (!result.ok) return result;
    // A replay answers the entry as stored: with its blobs' values.
    return capture(async () => ({
      ...result.value,
      entries: await this.#host.blobs.fill(result.value.entries),
    }));
  }

  async import(
    entries: readonly SessionEntry[],
    options: ImportOptions & { blobs?: BlobPolicy } & Building,
  ): Promise<Result<void>> {
    const { blobs: policy, builder, ...importOptions } = options;
    const prepared = await capture(() => {
      this.#host.calls.checkListed(builder);
      checkNotFull(this.#host.sql, this.#host.env());
      return this.#host.blobs.prepare(entries, policy, (inputs, loaded) =>
        this.#host.session.writes.plannedImport(inputs, importOptions, loaded),
      );
    });
    if (!prepared.ok) return prepared;
    return this.#host.calls.limitedWrite(
      (session, room) => session.writes.importEntries(entries, importOptions, room, prepared.value),
      builder,
    );
  }
}
