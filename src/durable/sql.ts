import { SessionError } from "../core/errors";
import { isQueryError } from "../core/search-query";

/**
 * `sql\`SELECT … WHERE id = ${id}\`` over a Durable Object's SQLite: the query reads as SQL and
 * every interpolated value is a bound parameter, never spliced into the text.
 */
export type Sql = <T extends Record<string, SqlStorageValue> = Record<string, SqlStorageValue>>(
  strings: TemplateStringsArray,
  ...values: SqlStorageValue[]
) => SqlStorageCursor<T>;

export function sqlOf(storage: SqlStorage): Sql {
  return (strings, ...values) => storage.exec(strings.join("?"), ...values);
}

/** Runs `statements` (a migration) one by one: `exec` takes a single statement with bindings. */
export function execScript(storage: SqlStorage, script: string): void {
  for (const statement of script.split(";")) {
    if (statement.trim()) storage.exec(statement);
  }
}

/**
 * Applies the migrations not yet applied, in order, recording each version. `migrations[i]` takes
 * the schema from version i to i + 1: a script split at semicolons, or a list of statements run
 * whole (for statements that hold semicolons themselves, such as triggers). Tables that share an
 * object's database with others (a stream store inside a session's object) keep their versions in
 * a `versionTable` of their own.
 */
export function migrate(
  storage: SqlStorage,
  migrations: readonly (string | readonly string[])[],
  versionTable = "schema_version",
): void {
  storage.exec(`CREATE TABLE IF NOT EXISTS ${versionTable} (version INTEGER NOT NULL)`);
  const row = storage.exec<{ version: number }>(`SELECT max(version) AS version FROM ${versionTable}`).one();
  const current = row.version ?? 0;
  for (let version = current; version < migrations.length; version++) {
    const migration = migrations[version] as string | readonly string[];
    if (typeof migration === "string") execScript(storage, migration);
    else for (const statement of migration) storage.exec(statement);
    storage.exec(`INSERT INTO ${versionTable} (version) VALUES (?)`, version + 1);
  }
}

/** Runs an FTS5 MATCH; a query SQLite cannot read is the caller's mistake (400), never a 500. */
export function matchRows<T extends Record<string, SqlStorageValue>>(run: () => SqlStorageCursor<T>): T[] {
  try {
    return run().toArray();
  } catch (error) {
    if (isQueryError(error)) {
      throw new SessionError("invalid_request", "the search query could not be read", {
        reason: String(error).replace(/^Error: /, ""),
      });
    }
    throw error;
  }
}

/**
 * Tables a store makes with its first write, so that an object that never writes to it stores
 * nothing of it. Whether they exist is read from storage when first asked, and read again after a
 * transaction that may have made them rolled back (`reload`).
 */
export class LazyTables {
  readonly #storage: SqlStorage;
  readonly #migrations: readonly (string | readonly string[])[];
  readonly #versionTable: string;
  #exist: boolean | undefined;

  /** Opens the tables, updating them if they exist (call it inside a transaction). */
  constructor(
    storage: SqlStorage,
    migrations: readonly (string | readonly string[])[],
    versionTable: string,
  ) {
    this.#storage = storage;
    this.#migrations = migrations;
    this.#versionTable = versionTable;
    if (this.exist()) migrate(storage, migrations, versionTable);
  }

  exist(): boolean {
    this.#exist ??=
      this.#storage
        .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", this.#versionTable)
        .toArray().length > 0;
    return this.#exist;
  }

  /** Makes the tables if they do not exist yet (inside the write's transaction). */
  make(): void {
    if (this.exist()) return;
    migrate(this.#storage, this.#migrations, this.#versionTable);
    this.#exist = true;
  }

  reload(): void {
    this.#exist = undefined;
  }
}

/**
 * The characters of rows a statement takes as one JSON parameter (`json_each(?)`): well below the
 * platform's 2 MB for one value, even at three bytes a character.
 */
export const JSON_PARAM_CHARS = 512 * 1024;

/**
 * Rows in order, for statements that take many as one JSON parameter: runs of at most `maxRows`
 * rows and JSON_PARAM_CHARS characters as `{ json }`, and a row longer than that alone as `{ row }`,
 * for a statement that binds its values one by one.
 */
export function* jsonRuns<T>(rows: readonly T[], maxRows: number): Generator<{ json: string } | { row: T }> {
  let run: string[] = [];
  let chars = 2;
  const end = () => {
    const json = `[${run.join(",")}]`;
    run = [];
    chars = 2;
    return { json };
  };
  for (const row of rows) {
    const json = JSON.stringify(row);
    if (json.length + 2 > JSON_PARAM_CHARS) {
      if (run.length > 0) yield end();
      yield { row };
      continue;
    }
    if (run.length === maxRows || chars + json.length + 1 > JSON_PARAM_CHARS) yield end();
    run.push(json);
    chars += json.length + 1;
  }
  if (run.length > 0) yield end();
}

/**
 * Numbers (seqs, say) as JSON lists for statements that take them as one parameter
 * (`json_each(?)`), in order: as many lists as JSON_PARAM_CHARS needs, none for none.
 */
export function jsonLists(values: readonly number[]): string[] {
  return [...jsonRuns(values, Number.POSITIVE_INFINITY)].map((run) =>
    "json" in run ? run.json : JSON.stringify([run.row]),
  );
}
