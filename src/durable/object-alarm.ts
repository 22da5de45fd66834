/*
 * The one owner of an object's alarm, for every object class: a session's (its life, its directory
 * reports, its generations, its fork's copy), a directory shard's (the tenant's retention sweep) and
 * a stream's (its expiry and its report). Each part with work for the alarm states when that work is
 * next due; only here is the alarm set, to the earliest of those times, and never later than it
 * stands: no part's write, failure or restart can push back work another part has due sooner. An
 * alarm that comes early finds nothing due and is set again; one that comes on time runs every
 * part's due work.
 */

/**
 * The latest time the alarm is set to: the platform's alarms refuse dates after 2189. Work a part
 * says is due later (an expiry stored before expiries were bounded, a sliding one renewed past the
 * bound) is looked at then, found not yet due, and waited for again.
 */
const LATEST_ALARM_AT = Date.parse("2180-01-01T00:00:00.000Z");

/** When a part's work is next due (milliseconds since the epoch), if it has any. */
export type DueTime = () => number | undefined;

/** Logs a failure of background work (`task` names it). */
export type FailureLog = (task: string, error: unknown) => unknown;

export class ObjectAlarm {
  readonly #storage: DurableObjectStorage;
  readonly #logFailure: FailureLog;
  readonly #parts: DueTime[] = [];
  /** Arming one at a time: each reads the alarm as the one before left it. */
  #arming: Promise<void> = Promise.resolve();

  constructor(storage: DurableObjectStorage, logFailure: FailureLog) {
    this.#storage = storage;
    this.#logFailure = logFailure;
  }

  /** A part with work for the alarm: `due` says when it is next due. */
  add(due: DueTime): void {
    this.#parts.push(due);
  }

  /** The earliest time any part's work is due, if any part has work (a time that is none, ignored). */
  nextDue(): number | undefined {
    let next: number | undefined;
    for (const due of this.#parts) {
      const at = due();
      if (at !== undefined && !Number.isNaN(at) && (next === undefined || at < next)) next = at;
    }
    return next;
  }

  /**
   * Makes sure the alarm comes by the earliest due time, or by LATEST_ALARM_AT when that is later
   * (an alarm set sooner stays as it is).
   */
  arm(): Promise<void> {
    const armed = this.#arming.then(async () => {
      const current = await this.#storage.getAlarm();
      const due = this.nextDue();
      const at = due === undefined ? undefined : Math.min(due, LATEST_ALARM_AT);
      if (at !== undefined && (current === null || current > at)) await this.#storage.setAlarm(at);
    });
    this.#arming = armed.catch(() => undefined);
    return armed;
  }

  /** `arm`, for a caller that cannot wait for it (`task` names it in the log line of a failure). */
  armSoon(task: string): void {
    this.arm().catch((error) => this.#logFailure(task, error));
  }

  /**
   * Sets the alarm to exactly the earliest due time, or clears it: for when what it was set for is
   * known to be over (a deleted session restored no longer waits to be purged).
   */
  reset(): Promise<void> {
    // One call either way (setting replaces the alarm): should it fail, the alarm stands as it was,
    // comes early, finds nothing due and is set again, rather than no alarm being left at all.
    const reset = this.#arming.then(async () => {
      const due = this.nextDue();
      if (due === undefined) await this.#storage.deleteAlarm();
      else await this.#storage.setAlarm(Math.min(due, LATEST_ALARM_AT));
    });
    this.#arming = reset.catch(() => undefined);
    return reset;
  }

  /** No alarm: the object is about to hold nothing (a purge; should it fail, it arms again). */
  clear(): Promise<void> {
    const cleared = this.#arming.then(() => this.#storage.deleteAlarm());
    this.#arming = cleared.catch(() => undefined);
    return cleared;
  }
}
