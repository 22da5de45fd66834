import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, TomlError } from "smol-toml";
import { fail, terminalSafe } from "./output";

/*
 * What `pull` reads of Codex's own config, `config.toml` in its home (`CODEX_HOME`, else
 * `~/.codex`), read as Codex reads it: a TOML 1.0 document, which Codex refuses to start with when
 * it does not parse or when a value it reads has the wrong type.
 */

/** The provider Codex uses when its config names none. */
const CODEX_DEFAULT_PROVIDER = "openai";

type Table = Record<string, unknown>;

const isTable = (value: unknown): value is Table =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);

/** A key's value in a parsed table: own keys only (a profile named `constructor` is a name like any). */
const valueAt = (table: Table, key: string): unknown => (Object.hasOwn(table, key) ? table[key] : undefined);

/** The parsed config at `path`; a file that is not TOML fails, naming the file and where it breaks. */
function readConfig(path: string): Table {
  try {
    // Codex's integers are 64-bit: one past JavaScript's safe range is still a valid config.
    return parse(readFileSync(path, "utf8"), { integersAsBigInt: "asNeeded" });
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    // The error's message goes on with the lines around the fault, which are the user's own config.
    const reason = (error.message.split("\n")[0] ?? "").replace(/^Invalid TOML document: /, "");
    fail(terminalSafe(`${path} is not valid TOML: line ${error.line}, column ${error.column}: ${reason}`));
  }
}

/** A string the config at `path` may leave out (`key` under `table`); any other type fails, as it does for Codex. */
function optionalString(path: string, table: Table, key: string, under = ""): string | undefined {
  const value = valueAt(table, key);
  if (value === undefined || typeof value === "string") return value;
  fail(terminalSafe(`${path}: ${under}${key} is not a string`));
}

/**
 * The provider Codex run with home `home` uses, resolved as Codex resolves it from its
 * config.toml: the `model_provider` of the profile that `profile` selects, else the top-level
 * `model_provider`, else Codex's default. A `profile` naming a profile the file does not define
 * fails, as Codex does not start with it.
 */
export function codexProvider(home: string): string {
  const path = join(home, "config.toml");
  if (!existsSync(path)) return CODEX_DEFAULT_PROVIDER;
  const config = readConfig(path);
  const selected = optionalString(path, config, "profile");
  let fromProfile: string | undefined;
  if (selected !== undefined) {
    const profiles = valueAt(config, "profiles");
    const profile = isTable(profiles) ? valueAt(profiles, selected) : undefined;
    if (!isTable(profile))
      fail(terminalSafe(`${path} selects profile ${JSON.stringify(selected)}, which it does not define`));
    fromProfile = optionalString(path, profile, "model_provider", `profiles.${JSON.stringify(selected)}.`);
  }
  return fromProfile ?? optionalString(path, config, "model_provider") ?? CODEX_DEFAULT_PROVIDER;
}
