import type { CompactionStorage } from "../../core/compact-session";
import { compactSession } from "../../core/compact-session";
import type { OmittedHistory } from "../../core/compaction";
import { DEFAULT_KEEP_RECENT_TOKENS } from "../../core/compaction";
import type { StoredEntry, TreeEntry } from "../../core/entries";
import { SessionError, unwrap } from "../../core/errors";
import { nowIso } from "../../core/ids";
import type { AutoCompactSettings, AutoCompactStatus } from "../../core/session-schemas";
import { summarizerFromConfig } from "../../core/summarizers";
import { measuredSummarizer } from "../metrics";
import type { SessionObjectState } from "./object-state";
import type { SessionCalls } from "./session-calls";
import type { EventHub } from "./session-watchers";

/*
 * Automatic compaction of one session, run by its object's alarm after writes: when `autoCompact`
 * is set and the context outgrew `contextWindow - reserveTokens`, core's `compactSession`
 * summarizes and appends a compaction through the object's own writes (its rules and quotas),
 * never calling the object back. Its state is the session's `autoCompact.status`.
 */

/**
 * What a compaction meets when a generation opened while its summary was written: the answer goes
 * under the leaf the generation opened on, so a compaction landing there now would be left on
 * another branch. Nothing is written; the session compacts after the write that ends the
 * generation.
 */
function generationOpened(): SessionError {
  return new SessionError(
    "leaf_conflict",
    "a generation opened while the summary was written: the session compacts once it ends",
    { generationOpen: true },
  );
}

function isGenerationOpened(error: unknown): boolean {
  return (
    error instanceof SessionError &&
    error.code === "leaf_conflict" &&
    (error.details as { generationOpen?: boolean } | undefined)?.generationOpen === true
  );
}

export class AutoCompaction {
  readonly #object: SessionObjectState;
  /** Its compaction is written through the object's checks (within the session's room), as every write. */
  readonly #calls: SessionCalls;
  /** The session's watchers hear of each change of state. */
  readonly #events: EventHub;
  /** Whether a generation is open: its answer is still to be written under the parent it opened on. */
  readonly #generationOpen: () => boolean;
  #running = false;

  constructor(
    object: SessionObjectState,
    calls: SessionCalls,
    events: EventHub,
    generationOpen: () => boolean,
  ) {
    this.#object = object;
    this.#calls = calls;
    this.#events = events;
    this.#generationOpen = generationOpen;
  }

  /**
   * The session as core's compaction sees it: reads from the object's SQLite, and the compaction
   * appended through the same rules and checks as any write (the branch may move while the
   * summary is written), not while a generation is open (`generationOpened`).
   */
  #storage(): CompactionStorage {
    const { session } = this.#object;
    return {
      getLeafId: async () => session.state.leafId,
      getContextPath: async (leafId) =>
        (await this.#object.blobs.fill(session.reads.contextEntries(leafId))) as StoredEntry<TreeEntry>[],
      getCompactionPath: async (leafId, keepRecentTokens) => this.#compactionPath(leafId, keepRecentTokens),
      appendEntries: async (entries, options) =>
        unwrap(
          await this.#calls.limitedWrite((s, room) => {
            if (this.#generationOpen()) throw generationOpened();
            return s.writes.appendEntries(entries, options ?? {}, room);
          }),
        ),
    };
  }

  /** What a compaction reads (session-reads.ts), its blobs' values read back. */
  async #compactionPath(
    leafId: string,
    keepRecentTokens: number,
  ): Promise<{ path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory }> {
    const { path, omitted } = this.#object.session.reads.compactionPath(leafId, keepRecentTokens);
    const filled = (await this.#object.blobs.fill(path)) as StoredEntry<TreeEntry>[];
    return omitted ? { path: filled, omitted } : { path: filled };
  }

  #setStatus(status: AutoCompactStatus): void {
    this.#object.session.writes.setAutoCompaction(status);
    this.#events.changed({ event: "compaction", data: status });
  }

  /**
   * A compaction stored as running when the object starts was cut off by an eviction or a restart
   * (no instance runs it now): it failed, and the next write's alarm compacts again.
   */
  failInterrupted(): void {
    const { session, lifecycle } = this.#object;
    if (!session.exists || lifecycle.deleted) return;
    if (session.state.autoCompaction?.state !== "running") return;
    this.#setStatus({
      state: "failed",
      lastError: "interrupted: the session's object restarted while the summary was written",
    });
  }

  /**
   * Whether the context at `leafId` outgrew its budget, measured from what the session stores (no
   * blob read back; session-reads.ts), in bounded memory. A long path holding less than a
   * compaction keeps has nothing to compact.
   */
  #overBudget(leafId: string, settings: AutoCompactSettings): boolean {
    const keep = settings.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS;
    try {
      const tokens = this.#object.session.reads.contextTokens(leafId, keep);
      return tokens > settings.contextWindow - settings.reserveTokens;
    } catch (error) {
      if (error instanceof SessionError && error.code === "nothing_to_compact") return false;
      throw error;
    }
  }

  /** Compacts when the session's settings ask for it and its context is over budget. */
  async runIfDue(): Promise<void> {
    const { session, telemetry } = this.#object;
    const { header, leafId, autoCompaction } = session.state;
    const settings = header.autoCompact;
    if (!settings || leafId === null || this.#running) return;
    if (!this.#overBudget(leafId, settings)) return;
    this.#running = true;
    const last = { ...autoCompaction };
    this.#setStatus({ ...last, state: "running" });
    const lastRunAt = nowIso();
    const sessionId = header.id;
    const started = Date.now();
    const summaries: { outcome: "ok" | "failed"; durationMs: number }[] = [];
    const summarizer = summarizerFromConfig(this.#object.env);
    let outcome = "ok";
    try {
      const entry = await compactSession(this.#storage(), {
        keepRecentTokens: settings.keepRecentTokens,
        summarizer: measuredSummarizer(summarizer, (result, durationMs) =>
          summaries.push({ outcome: result, durationMs }),
        ),
      });
      this.#setStatus({ state: "idle", lastRunAt, lastEntryId: entry.id });
    } catch (error) {
      outcome = error instanceof SessionError ? error.code : "internal";
      if (!this.#object.session.exists || this.#object.lifecycle.deleted) return;
      if (
        (error instanceof SessionError && error.code === "nothing_to_compact") ||
        isGenerationOpened(error)
      ) {
        this.#setStatus({ state: "idle", lastRunAt });
      } else {
        const message = error instanceof Error ? error.message : String(error);
        await telemetry.logFailure("auto_compaction", error);
        this.#setStatus({ state: "failed", lastRunAt, lastError: message });
      }
    } finally {
      for (const summary of summaries) {
        await telemetry.metric({ kind: "summary", sessionId, summarizer: summarizer.name, ...summary });
      }
      await telemetry.metric({
        kind: "compaction",
        sessionId,
        trigger: "auto",
        outcome,
        durationMs: Date.now() - started,
      });
      this.#running = false;
    }
  }
}
