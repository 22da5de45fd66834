import * as z from "zod";
import { tryParseJson } from "../core/json";
import { isRecord } from "../core/providers/incoming";
import { Access, type Caller } from "./access";
import { checkedSetting } from "./checked-setting";

/*
 * `API_KEYS` (a secret) maps the SHA-256 (hex) of each key to its caller: the tenant's name
 * (full access) or `{"tenant": "acme", "access": "read" | "write"}`. Anything else makes the
 * whole setting invalid, and /v1 then answers 503 until it is fixed: guessing what a malformed
 * entry meant could grant more than its author intended, and silently dropping it would hide
 * the mistake behind 401s.
 */

const KEY_HASH = /^[0-9a-f]{64}$/i;
const Tenant = z.string().min(1, "the tenant must be a non-empty string");
const KeyObject = z.strictObject({ tenant: Tenant, access: Access });

export type KeyTable = ReadonlyMap<string, Caller>;

const keyTable = checkedSetting<KeyTable>(
  "API_KEYS",
  "API_KEYS is invalid, so every /v1 request answers 503 until it is fixed",
);

/** The caller of one entry, or what is wrong with it. */
function entryCaller(value: unknown): Caller | string[] {
  if (typeof value !== "string" && !isRecord(value)) {
    return [': must be the tenant (a string) or {"tenant": "...", "access": "read" | "write"}'];
  }
  const result = typeof value === "string" ? Tenant.safeParse(value) : KeyObject.safeParse(value);
  if (!result.success) {
    return result.error.issues.map(
      (issue) => `${issue.path.map((part) => `.${String(part)}`).join("")}: ${issue.message}`,
    );
  }
  return typeof result.data === "string" ? { tenant: result.data, access: "write" } : result.data;
}

function parse(source: string): KeyTable {
  const raw = tryParseJson(source);
  if (raw === undefined) throw new Error("it is not valid JSON");
  if (!isRecord(raw)) {
    throw new Error('it must be a JSON object: {"<sha256 of a key>": "<tenant>" | {"tenant", "access"}}');
  }
  const table = new Map<string, Caller>();
  const problems: string[] = [];
  // Entries are named by position, never by their key: it may be a raw key put there by mistake.
  Object.entries(raw).forEach(([hash, value], index) => {
    const where = `entry ${index + 1}`;
    if (!KEY_HASH.test(hash)) problems.push(`${where}: a key must be given as its SHA-256, 64 hex digits`);
    const caller = entryCaller(value);
    if (Array.isArray(caller)) problems.push(...caller.map((problem) => `${where}${problem}`));
    else table.set(hash.toLowerCase(), caller);
  });
  if (problems.length > 0) throw new Error(problems.join("; "));
  return table;
}

/**
 * The keys `API_KEYS` configures (none when unset); `misconfigured` when the setting is invalid,
 * logged once for each value it takes.
 */
export function apiKeyTable(source: string | undefined): KeyTable {
  return source ? keyTable(source, () => parse(source)) : new Map();
}
