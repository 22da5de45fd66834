import type { GenerationFormat, GenerationState, StoppedBy } from "../../core/generations/generation-schemas";
import type { Sql } from "../sql";
import { LazyTables } from "../sql";
import type { Reloadable } from "../transaction";

/*
 * A session's generations in its object's SQLite: one row each, from the moment it opens until its
 * stream's retention window closes. The tables are versioned apart (`generation_schema_version`)
 * and made by the first generation, so a session that never had one stores nothing for them.
 * Their chunks are a stream of the object's stream store, under `generation/<id>`, counted in the
 * session's bytes (generations.ts says how much).
 */

const MIGRATIONS = [
  `
  CREATE TABLE generations (
    id TEXT PRIMARY KEY,
    parent_id TEXT,
    format TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    api TEXT,
    state TEXT NOT NULL,
    opened_at INTEGER NOT NULL,
    abandon_ms INTEGER NOT NULL,
    retain_ms INTEGER NOT NULL,
    finished_at INTEGER,
    stopped_by TEXT,
    entry_ids TEXT
  )
  `,
  // Chunks counted in the session's bytes (rows from before count nothing), and what an ended
  // generation's stream still counts while it is kept.
  [
    "ALTER TABLE generations ADD COLUMN counted INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE generations ADD COLUMN held_bytes INTEGER NOT NULL DEFAULT 0",
  ],
];

const VERSION_TABLE = "generation_schema_version";

export interface GenerationRow {
  id: string;
  parentId: string | null;
  format: GenerationFormat;
  model: { provider: string; modelId: string } | undefined;
  api: string | undefined;
  state: GenerationState;
  openedAt: number;
  abandonMs: number;
  retainMs: number;
  finishedAt: number | null;
  stoppedBy: StoppedBy | null;
  entryIds: string[];
  /** Whether its chunks count in the session's bytes (those of generations opened before did not). */
  counted: boolean;
  /** Once it ended: the bytes its stream still counts while it is kept. */
  heldBytes: number;
}

type Row = {
  id: string;
  parent_id: string | null;
  format: string;
  provider: string | null;
  model: string | null;
  api: string | null;
  state: string;
  opened_at: number;
  abandon_ms: number;
  retain_ms: number;
  finished_at: number | null;
  stopped_by: string | null;
  entry_ids: string | null;
  counted: number;
  held_bytes: number;
};

function rowOf(row: Row): GenerationRow {
  return {
    id: row.id,
    parentId: row.parent_id,
    format: row.format as GenerationFormat,
    model:
      row.provider === null || row.model === null
        ? undefined
        : { provider: row.provider, modelId: row.model },
    api: row.api ?? undefined,
    state: row.state as GenerationState,
    openedAt: row.opened_at,
    abandonMs: row.abandon_ms,
    retainMs: row.retain_ms,
    finishedAt: row.finished_at,
    stoppedBy: row.stopped_by as StoppedBy | null,
    entryIds: row.entry_ids === null ? [] : (JSON.parse(row.entry_ids) as string[]),
    counted: row.counted === 1,
    heldBytes: row.held_bytes,
  };
}

export class GenerationRows implements Reloadable {
  readonly #sql: Sql;
  readonly #tables: LazyTables;

  constructor(storage: SqlStorage, sql: Sql) {
    this.#sql = sql;
    this.#tables = new LazyTables(storage, MIGRATIONS, VERSION_TABLE);
  }

  reload(): void {
    this.#tables.reload();
  }

  get(id: string): GenerationRow | undefined {
    if (!this.#tables.exist()) return undefined;
    const row = this.#sql<Row>`SELECT * FROM generations WHERE id = ${id}`.toArray()[0];
    return row && rowOf(row);
  }

  /** Every generation still kept, oldest first. */
  all(): GenerationRow[] {
    if (!this.#tables.exist()) return [];
    return this.#sql<Row>`SELECT * FROM generations ORDER BY opened_at, id`.toArray().map(rowOf);
  }

  insert(row: GenerationRow): void {
    this.#tables.make();
    this.#sql`INSERT INTO generations (id, parent_id, format, provider, model, api, state, opened_at,
        abandon_ms, retain_ms, counted)
      VALUES (${row.id}, ${row.parentId}, ${row.format}, ${row.model?.provider ?? null},
        ${row.model?.modelId ?? null}, ${row.api ?? null}, ${row.state}, ${row.openedAt}, ${row.abandonMs},
        ${row.retainMs}, ${row.counted ? 1 : 0})`;
  }

  /**
   * The generation is over: finished or stopped, at `at`, its answer the entries `entryIds`; its
   * stream counts `heldBytes` while it is kept.
   */
  end(
    id: string,
    state: Exclude<GenerationState, "open">,
    at: number,
    stoppedBy: StoppedBy | null,
    entryIds: string[],
    heldBytes: number,
  ): void {
    this.#sql`UPDATE generations SET state = ${state}, finished_at = ${at}, stopped_by = ${stoppedBy},
        entry_ids = ${JSON.stringify(entryIds)}, held_bytes = ${heldBytes}
      WHERE id = ${id}`;
  }

  remove(id: string): void {
    this.#sql`DELETE FROM generations WHERE id = ${id}`;
  }
}
