import { DEFAULT_ABANDON_SECONDS, DEFAULT_RETAIN_SECONDS } from "../../core/generations/generation-schemas";
import type { DurableEnv } from "../env";
import { ObjectAlarm } from "../object-alarm";
import { objectEnv } from "../placement/placed-env";
import { numberSetting } from "../settings";
import { sqlOf } from "../sql";
import { AutoCompaction } from "./auto-compaction";
import { ContextAnswers } from "./context-answers";
import { DirectoryReports } from "./directory-reports";
import { EntryIntake } from "./entry-intake";
import { copySettings, ForkCopy } from "./fork-copy";
import { ForkHolds } from "./fork-holds";
import { Generations } from "./generations";
import { SessionLifecycle } from "./lifecycle";
import { QuotaChecks } from "./quota-checks";
import { SessionBlobs } from "./session-blobs";
import { SessionCalls } from "./session-calls";
import { SessionLife } from "./session-life";
import { SessionStore } from "./session-store";
import { SessionTelemetry } from "./session-telemetry";
import { SessionWatchers } from "./session-watchers";

/*
 * The parts of a session's object, made and wired together: each is given the others it uses.
 * Where two use each other (the watchers and the generations, the calls and the session's life),
 * one reaches the other through a function, called only once both are made. The objects a part
 * reaches (blobs, the directory, the quota ledger) are those of the object's own jurisdiction.
 */

/**
 * The parts of the object made with `env`; `current` is the object's environment as it stands when
 * a part reads it (its bindings, the summarizer's settings, the storage ceiling).
 */
export function sessionParts(ctx: DurableObjectState, env: DurableEnv, current: () => DurableEnv) {
  const placed = objectEnv(env, ctx);
  const session = ctx.storage.transactionSync(() => new SessionStore(ctx.storage));
  const telemetry = new SessionTelemetry(() => current().METRICS, session);
  const blobs = new SessionBlobs({
    env: placed,
    jurisdiction: ctx.id.jurisdiction,
    storage: ctx.storage,
    sql: sqlOf(ctx.storage.sql),
    session,
  });
  const quotas = new QuotaChecks(placed);
  const lifecycle = new SessionLifecycle(sqlOf(ctx.storage.sql));
  const holds = new ForkHolds(sqlOf(ctx.storage.sql));
  const alarm = new ObjectAlarm(ctx.storage, (task, error) => telemetry.logFailure(task, error));
  const copy: ForkCopy = new ForkCopy({
    placed,
    storage: ctx.storage,
    alarm,
    session,
    blobs,
    quotas,
    telemetry,
    settings: () => copySettings(current()),
    // The directory hears of the whole fork, and its entries are indexed for search.
    copied: () => {
      reports.schedule();
      alarm.armSoon("schedule_search_indexing");
    },
  });
  const calls: SessionCalls = new SessionCalls({
    session,
    lifecycle,
    blobs,
    quotas,
    copy,
    reports: () => reports,
    alarm,
  });
  const watchers = new SessionWatchers({
    ctx,
    session,
    blobs,
    calls,
    copy,
    telemetry,
    openGenerations: () => generations.openOnes(),
  });
  const events = watchers.hub;
  session.writes.onWritten = (entries, leafId) => events.written(entries, leafId);
  // The session's life uses what the directory reports use, and the reports themselves.
  const reportHost = { env: placed, storage: ctx.storage, alarm, session, lifecycle, quotas, telemetry };
  const reports = new DirectoryReports(reportHost);
  const life = new SessionLife({
    ...reportHost,
    reports,
    events,
    holds,
    copy,
    releaseBlobs: () => blobs.release(),
  });
  const autoCompaction = new AutoCompaction({
    session,
    summarizerConfig: current,
    filled: (entries) => blobs.fill(entries),
    write: (write) => calls.limitedWrite(write),
    gone: () => !session.exists || lifecycle.deleted,
    statusChanged: (status) => events.changed({ event: "compaction", data: status }),
    telemetry,
  });
  const generations: Generations = new Generations({
    storage: ctx.storage,
    session,
    defaults: {
      abandonSeconds: numberSetting(env.GENERATION_ABANDON_SECONDS, DEFAULT_ABANDON_SECONDS),
      retainSeconds: numberSetting(env.GENERATION_RETAIN_SECONDS, DEFAULT_RETAIN_SECONDS),
    },
    calls,
    quotas,
    changed: (info) => events.changed({ event: "generation", data: info }),
  });
  // The parts with work for the alarm, each saying when it is next due.
  alarm.add(() => life.nextDue());
  alarm.add(() => reports.nextDue());
  alarm.add(() => generations.nextDue());
  alarm.add(() => copy.nextDue());
  return {
    session,
    calls,
    watchers,
    lifecycle,
    reports,
    life,
    alarm,
    autoCompaction,
    generations,
    blobs,
    telemetry,
    holds,
    copy,
    contexts: new ContextAnswers({ calls, blobs, telemetry }),
    intake: new EntryIntake({ sql: ctx.storage.sql, env: current, session, calls, blobs, telemetry }),
  };
}

/** The parts of a session's object, as `sessionParts` makes them. */
export type SessionParts = ReturnType<typeof sessionParts>;
