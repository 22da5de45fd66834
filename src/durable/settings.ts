import type * as z from "zod";
import { zodDetails } from "../core/append";
import { SessionError } from "../core/errors";
import { tryParseJson } from "../core/json";

/**
 * A reader of the service's JSON setting `name`, remembering the last text it read. A setting
 * that is not JSON, or not what `schema` takes (`shape` shows what it takes), is `misconfigured`.
 */
export function jsonSetting<T>(name: string, schema: z.ZodType<T>, shape = ""): (text: string) => T {
  let last: { text: string; value: T } | undefined;
  return (text) => {
    if (last?.text === text) return last.value;
    const value = tryParseJson(text);
    if (value === undefined) {
      throw new SessionError("misconfigured", `the service's ${name} setting is not valid JSON`);
    }
    const result = schema.safeParse(value);
    if (!result.success) {
      const message = `the service's ${name} setting is invalid${shape}`;
      throw new SessionError("misconfigured", message, zodDetails(result.error));
    }
    last = { text, value: result.data };
    return result.data;
  };
}

interface NumberRule {
  min?: number;
  max?: number;
  whole?: boolean;
}

/** A set number setting as the service takes it (capped at `max`), or undefined when it does not take it. */
function readNumber(value: string, rule: NumberRule): number | undefined {
  const { min = 0, max = Number.POSITIVE_INFINITY, whole = true } = rule;
  const parsed = Number(value);
  const valid = whole ? Number.isInteger(parsed) : Number.isFinite(parsed);
  return valid && parsed >= min ? Math.min(parsed, max) : undefined;
}

/**
 * A number from the service's environment, or `fallback` when the setting is unset, blank, not a
 * number, below `min` or (unless `whole` is false) not a whole number; capped at `max`.
 */
export function numberSetting(value: string | undefined, fallback: number, rule: NumberRule = {}): number {
  if (value === undefined || value.trim() === "") return fallback;
  return readNumber(value, rule) ?? fallback;
}

/**
 * A number setting whose default would do harm in place of the value meant (a shard count that
 * hides shards, a recovery window that purges sooner): `fallback` when unset or blank, and
 * `misconfigured` when set to anything `numberSetting` would read as unset.
 */
export function checkedNumberSetting(
  name: string,
  value: string | undefined,
  fallback: number,
  rule: NumberRule = {},
): number {
  if (value === undefined || value.trim() === "") return fallback;
  const read = readNumber(value, rule);
  if (read === undefined) {
    const { min = 0, whole = true } = rule;
    const wanted = `${whole ? "a whole number" : "a number"} of at least ${min}`;
    throw new SessionError(
      "misconfigured",
      `the service's ${name} setting ${JSON.stringify(value)} is not ${wanted}`,
    );
  }
  return read;
}
