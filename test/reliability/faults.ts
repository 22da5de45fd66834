/*
 * Faults the reliability tests inject into the service's own objects: the plan they set (shared by
 * every object of the isolate and the tests, as the Workers pool runs them in one), and the wrapper
 * around an object's real storage that follows it. Nothing here stands in for storage: statements
 * run on the object's SQLite as always, and a fault is a real failure in the middle of a real
 * transaction (which the runtime rolls back) or a real reset of the object after a commit. Only
 * test/reliability/worker.ts uses it; nothing in src/ does.
 */

import { seededRandom } from "../support/random";

/** Where a fault strikes. */
export type FaultPoint =
  /** A SQL statement inside a transaction: it fails as a passing SQLite error would (SQLITE_IOERR). */
  | "statement"
  /** Just after a transaction committed, before the object answers: the object is reset. */
  | "commit"
  /** A session object's alarm: it fails before doing anything, and the runtime runs it again. */
  | "alarm"
  /** `storage.deleteAll()` (purging a session): it fails. */
  | "deleteAll"
  /** `storage.setAlarm()`: it fails, and the alarm stays as it was. */
  | "setAlarm"
  /**
   * A call to a directory shard (`matching`: the name of the method called): the shard is reset
   * before it answers, as when it cannot be reached (`FaultPlan.directoryDown`, for every call).
   */
  | "directory"
  /**
   * A stream object's answer to a fork's create (`forkPoint`): what the call wrote is stored, and
   * the object is reset before it answers.
   */
  | "answer";

export interface FaultRule {
  point: FaultPoint;
  /** The object it applies to (a session object's id, `idFromName(…).toString()`); every one when absent. */
  object?: string;
  /** Calls at this point that go through before the first that fails. */
  skip?: number;
  /** Calls it fails before it is spent (default 1; Infinity while it stands). */
  times?: number;
  /** Instead of skip/times: the chance that each call fails, drawn from the plan's seeded random. */
  chance?: number;
  /** Of statements, only those whose SQL this matches; of directory calls, their method's name. */
  matching?: RegExp;
  /** How a statement fails: a passing I/O error (default), or storage full at the platform's limit. */
  error?: "io" | "full";
  /**
   * Of directory calls: instead of failing, the call waits until the test sets `released` (the
   * shard answers late, while the caller goes on with other requests).
   */
  hold?: { released: boolean };
}

/** The message of an injected failure: a passing SQLite error, as the runtime would throw it. */
export const INJECTED_IO_ERROR = "injected fault: disk I/O error: SQLITE_IOERR";
/** The message of storage full at the platform's limit. */
export const INJECTED_FULL_ERROR = "injected fault: database or disk is full: SQLITE_FULL";

interface ActiveRule extends FaultRule {
  seen: number;
  failed: number;
}

/** The plan every fault-injecting object follows. */
export class FaultPlan {
  #rules: ActiveRule[] = [];
  #random = seededRandom(1);
  /** Directory shards are unreachable: every call to one resets it before it answers. */
  directoryDown = false;
  /** Settings that session objects read in place of their environment's (SESSION_FULL_BYTES, …). */
  readonly env: Record<string, string> = {};
  /** Faults injected so far, by point (and `directory` for calls refused while it was down). */
  readonly injected: Record<string, number> = {};

  add(rule: FaultRule): void {
    this.#rules.push({ ...rule, seen: 0, failed: 0 });
  }

  seed(seed: number): void {
    this.#random = seededRandom(seed);
  }

  /** Back to no faults at all (counts kept). */
  clear(): void {
    this.#rules = [];
    this.directoryDown = false;
    for (const key of Object.keys(this.env)) delete this.env[key];
  }

  count(point: string): void {
    this.injected[point] = (this.injected[point] ?? 0) + 1;
  }

  /** Whether this call at `point` of `object` fails. */
  strikes(point: FaultPoint, object: string): boolean {
    return this.rule(point, object) !== undefined;
  }

  /** The rule that makes this call at `point` of `object` (running `query`, a statement) fail, if one does. */
  rule(point: FaultPoint, object: string, query = ""): FaultRule | undefined {
    for (const rule of this.#rules) {
      if (rule.point !== point || (rule.object !== undefined && rule.object !== object)) continue;
      if (rule.matching && !rule.matching.test(query)) continue;
      if (rule.chance !== undefined) {
        if (this.#random() >= rule.chance) continue;
      } else {
        rule.seen++;
        if (rule.seen <= (rule.skip ?? 0) || rule.failed >= (rule.times ?? 1)) continue;
      }
      rule.failed++;
      this.count(point);
      return rule;
    }
    return undefined;
  }
}

export const faults = new FaultPlan();

function injectedError(): Error {
  return new Error(INJECTED_IO_ERROR);
}

/**
 * Gives `ctx` a storage that follows the plan: its real storage, with statements inside
 * transactions that may fail, a reset that may follow a commit, and a `deleteAll` or a `setAlarm`
 * that may fail.
 * Defined on the state itself (the object's base class takes only the runtime's own state).
 */
export function faultyStorage(ctx: DurableObjectState): void {
  const storage = ctx.storage;
  const object = ctx.id.toString();
  let depth = 0;
  const sql = new Proxy(storage.sql, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === "exec") {
        return (query: string, ...bindings: unknown[]) => {
          const rule = depth > 0 ? faults.rule("statement", object, query) : undefined;
          if (rule) throw new Error(rule.error === "full" ? INJECTED_FULL_ERROR : INJECTED_IO_ERROR);
          return target.exec(query, ...bindings);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const wrapped = new Proxy(storage, {
    get(target, property) {
      if (property === "sql") return sql;
      if (property === "transactionSync") {
        return <T>(work: () => T): T => {
          depth++;
          let result: T;
          try {
            result = target.transactionSync(work);
          } finally {
            depth--;
          }
          if (depth === 0 && faults.strikes("commit", object))
            ctx.abort("injected fault: reset after commit");
          return result;
        };
      }
      const value = Reflect.get(target, property, target);
      if (property === "deleteAll" || property === "setAlarm") {
        return async (...args: unknown[]) => {
          if (faults.strikes(property, object)) throw injectedError();
          return value.apply(target, args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  Object.defineProperty(ctx, "storage", { value: wrapped });
}

/** The object's environment, with the plan's settings in place of its own. */
export function plannedEnv<E extends object>(env: E): E {
  return new Proxy(env, {
    get(target, property) {
      if (typeof property === "string" && Object.hasOwn(faults.env, property)) return faults.env[property];
      return Reflect.get(target, property, target);
    },
  });
}
