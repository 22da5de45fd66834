import { DurableObject } from "cloudflare:workers";
import type { ListOptions, Result, SessionInfo, SessionPage } from "../core";
import { capture, decodeCursor, encodeCursor, sessionsPageLimit } from "../core";
import type { Sql } from "./sql";
import { migrate, sqlOf } from "./sql";

/*
 * One per tenant: the list of the tenant's sessions, kept from what each session object reports,
 * so listing never wakes a session. Reports are idempotent and ordered by a per-session version;
 * a deleted session leaves a tombstone so a late report cannot bring it back.
 */

const MIGRATIONS = [
  `
  CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    incarnation TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    info TEXT NOT NULL
  );
  CREATE INDEX sessions_by_updated ON sessions (updated_at, id);
  CREATE INDEX sessions_by_created ON sessions (created_at, id);
  CREATE TABLE tombstones (
    id TEXT NOT NULL,
    incarnation TEXT NOT NULL,
    deleted_at INTEGER NOT NULL,
    PRIMARY KEY (id, incarnation)
  )
  `,
  // The tenant's usage, summed from the reports as they land, so reading it never scans the list.
  [
    `CREATE TABLE usage (
      singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
      sessions INTEGER NOT NULL,
      entries INTEGER NOT NULL,
      bytes INTEGER NOT NULL
    )`,
    `INSERT INTO usage (singleton, sessions, entries, bytes)
      SELECT 1, count(*), total(info->>'entryCount'), total(info->>'bytes') FROM sessions`,
    `CREATE TRIGGER usage_on_insert AFTER INSERT ON sessions BEGIN
      UPDATE usage SET sessions = sessions + 1,
        entries = entries + coalesce(NEW.info->>'entryCount', 0),
        bytes = bytes + coalesce(NEW.info->>'bytes', 0);
    END`,
    `CREATE TRIGGER usage_on_update AFTER UPDATE OF info ON sessions BEGIN
      UPDATE usage SET
        entries = entries + coalesce(NEW.info->>'entryCount', 0) - coalesce(OLD.info->>'entryCount', 0),
        bytes = bytes + coalesce(NEW.info->>'bytes', 0) - coalesce(OLD.info->>'bytes', 0);
    END`,
    `CREATE TRIGGER usage_on_delete AFTER DELETE ON sessions BEGIN
      UPDATE usage SET sessions = sessions - 1,
        entries = entries - coalesce(OLD.info->>'entryCount', 0),
        bytes = bytes - coalesce(OLD.info->>'bytes', 0);
    END`,
  ],
];

/** Tombstones outlive any report still in flight by far; older ones are dropped. */
const TOMBSTONE_MS = 7 * 24 * 3600 * 1000;

export interface DirectoryReport {
  info: SessionInfo;
  /** Which life of the id this is: a deleted and re-created session is a new incarnation. */
  incarnation: string;
  /** Grows with every write to the session; older reports are ignored. */
  version: number;
}

/** What a tenant stores, as its sessions last reported it. */
export interface TenantUsage {
  sessions: number;
  entries: number;
  bytes: number;
}

export class SessionDirectory extends DurableObject<Record<string, never>> {
  readonly #sql: Sql;

  constructor(ctx: DurableObjectState, env: Record<string, never>) {
    super(ctx, env);
    this.#sql = sqlOf(ctx.storage.sql);
    ctx.storage.transactionSync(() => migrate(ctx.storage.sql, MIGRATIONS));
  }

  put(report: DirectoryReport): void {
    const { info, incarnation, version } = report;
    const buried = this
      .#sql`SELECT 1 FROM tombstones WHERE id = ${info.id} AND incarnation = ${incarnation}`.toArray();
    if (buried.length > 0) return;
    const json = JSON.stringify(info);
    this.#sql`INSERT INTO sessions (id, incarnation, version, created_at, updated_at, info)
      VALUES (${info.id}, ${incarnation}, ${version}, ${info.createdAt}, ${info.updatedAt}, ${json})
      ON CONFLICT (id) DO UPDATE SET
        incarnation = excluded.incarnation, version = excluded.version,
        created_at = excluded.created_at, updated_at = excluded.updated_at, info = excluded.info
      WHERE sessions.incarnation != excluded.incarnation OR sessions.version < excluded.version`;
  }

  remove(id: string, incarnation: string): void {
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      this
        .#sql`INSERT OR IGNORE INTO tombstones (id, incarnation, deleted_at) VALUES (${id}, ${incarnation}, ${now})`;
      this.#sql`DELETE FROM sessions WHERE id = ${id} AND incarnation = ${incarnation}`;
      this.#sql`DELETE FROM tombstones WHERE deleted_at < ${now - TOMBSTONE_MS}`;
    });
  }

  /** The tenant's usage; with `except`, without that session (which knows its own figures better). */
  usage(except?: string): TenantUsage {
    const total = this.#sql<{
      sessions: number;
      entries: number;
      bytes: number;
    }>`SELECT sessions, entries, bytes FROM usage`.one();
    if (except === undefined) return { ...total };
    const row = this.#sql<{ entries: number | null; bytes: number | null }>`
      SELECT info->>'entryCount' AS entries, info->>'bytes' AS bytes FROM sessions WHERE id = ${except}`.toArray()[0];
    if (!row) return { ...total };
    return {
      sessions: total.sessions - 1,
      entries: total.entries - (row.entries ?? 0),
      bytes: total.bytes - (row.bytes ?? 0),
    };
  }

  list(options: ListOptions): Promise<Result<SessionPage>> {
    return capture(() => {
      const limit = sessionsPageLimit(options);
      const cursor = options.cursor ? decodeCursor(options.cursor) : undefined;
      const byCreated = options.order === "created";
      const key = cursor?.key ?? "\uffff";
      const after = cursor?.id ?? "\uffff";
      const rows = (
        byCreated
          ? this.#sql<{ id: string; sort_key: string; info: string }>`
              SELECT id, created_at AS sort_key, info FROM sessions
              WHERE created_at < ${key} OR (created_at = ${key} AND id < ${after})
              ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
          : this.#sql<{ id: string; sort_key: string; info: string }>`
              SELECT id, updated_at AS sort_key, info FROM sessions
              WHERE updated_at < ${key} OR (updated_at = ${key} AND id < ${after})
              ORDER BY updated_at DESC, id DESC LIMIT ${limit + 1}`
      ).toArray();
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        sessions: page.map((row) => JSON.parse(row.info) as SessionInfo),
        nextCursor: rows.length > limit && last ? encodeCursor(last.sort_key, last.id) : null,
      };
    });
  }
}
