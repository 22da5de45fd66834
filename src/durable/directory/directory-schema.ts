import {
  BLOB_LEDGER_MIGRATION,
  BLOB_OWNERS_RELEASED_MIGRATION,
  BLOBS_DELETING_MIGRATION,
} from "../blobs/blob-ledger";
import {
  STREAM_CLAIM_PREFIX,
  STREAM_LISTING_BY_KEY_MIGRATION,
  STREAM_REGISTRY_MIGRATION,
} from "./stream-registry";
import { QUOTA_RELEASES_MIGRATION } from "./tenant-ledger";

/** The directory shard's tables (session-directory.ts), one migration a version. */
export const MIGRATIONS = [
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
  // The search index (rowid = the session's row), ranked with names weighing most; rows listed
  // before it existed are indexed by their name and preview until they report again. Which tenant
  // and shard this is, and the tenant's retention.
  `
  CREATE VIRTUAL TABLE session_text USING fts5(name, labels, preview, text, tokenize='porter unicode61');
  INSERT INTO session_text (session_text, rank) VALUES ('rank', 'bm25(10.0, 5.0, 3.0, 1.0)');
  INSERT INTO session_text (rowid, name, labels, preview, text)
    SELECT rowid, coalesce(info->>'name', ''), '', coalesce(info->>'preview', ''), '' FROM sessions;
  CREATE TABLE shard (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    tenant TEXT NOT NULL,
    shard INTEGER NOT NULL,
    idle_days INTEGER
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
  // The tenant's quota ledger (tenant-ledger.ts), kept by shard 0.
  `
  CREATE TABLE quota_claims (
    session_id TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL,
    seq INTEGER NOT NULL
  );
  CREATE TABLE quota_ledger (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    seeded_for TEXT NOT NULL
  )
  `,
  // The tenant's blobs and which sessions hold them (blob-ledger.ts), kept by shard 0.
  BLOB_LEDGER_MIGRATION,
  // The tenant's streams that report to this shard (stream-registry.ts).
  STREAM_REGISTRY_MIGRATION,
  // Each session's project (its `metadata.project`, when a string), read from its info as it is
  // written, and indexed beside the listing's orders so that listing a project reads its rows only.
  `
  ALTER TABLE sessions ADD COLUMN project TEXT GENERATED ALWAYS AS (
    CASE WHEN json_type(info, '$.metadata.project') = 'text' THEN info->>'$.metadata.project' END
  ) VIRTUAL;
  CREATE INDEX sessions_by_project_updated ON sessions (project, updated_at, id);
  CREATE INDEX sessions_by_project_created ON sessions (project, created_at, id)
  `,
  // The quota ledger's totals, summed from its claims as they change, so a claim never sums them.
  [
    `CREATE TABLE quota_totals (
      singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
      claims INTEGER NOT NULL,
      streams INTEGER NOT NULL,
      bytes INTEGER NOT NULL
    )`,
    `INSERT INTO quota_totals (singleton, claims, streams, bytes)
      SELECT 1, count(*), count(CASE WHEN substr(session_id, 1, 1) = '${STREAM_CLAIM_PREFIX}' THEN 1 END),
        coalesce(sum(bytes), 0)
      FROM quota_claims`,
    `CREATE TRIGGER quota_totals_on_insert AFTER INSERT ON quota_claims BEGIN
      UPDATE quota_totals SET claims = claims + 1,
        streams = streams + (substr(NEW.session_id, 1, 1) = '${STREAM_CLAIM_PREFIX}'),
        bytes = bytes + NEW.bytes;
    END`,
    `CREATE TRIGGER quota_totals_on_update AFTER UPDATE OF bytes ON quota_claims BEGIN
      UPDATE quota_totals SET bytes = bytes + NEW.bytes - OLD.bytes;
    END`,
    `CREATE TRIGGER quota_totals_on_delete AFTER DELETE ON quota_claims BEGIN
      UPDATE quota_totals SET claims = claims - 1,
        streams = streams - (substr(OLD.session_id, 1, 1) = '${STREAM_CLAIM_PREFIX}'),
        bytes = bytes - OLD.bytes;
    END`,
  ],
  // Which holders asked the quota ledger for room since it was last seeded (tenant-ledger.ts).
  "ALTER TABLE quota_claims ADD COLUMN asked_since_seed INTEGER NOT NULL DEFAULT 0",
  // The blobs being deleted, found without reading the ledger's other blobs (blob-ledger.ts).
  BLOBS_DELETING_MIGRATION,
  // Whether the shard knows the tenant's retention: a shard added when the count grew that could
  // not ask shard 0 for it asks again.
  "ALTER TABLE shard ADD COLUMN retention_known INTEGER NOT NULL DEFAULT 1",
  // Tombstones by age, so that dropping the old ones reads only those.
  "CREATE INDEX tombstones_by_deleted ON tombstones (deleted_at)",
  // The blob ledger's owners that gave their claims up, whose late claims it refuses (blob-ledger.ts).
  BLOB_OWNERS_RELEASED_MIGRATION,
  // The tenant's streams by key, for the listing's pages (stream-registry.ts).
  STREAM_LISTING_BY_KEY_MIGRATION,
  // The quota ledger's releases, whose late claims it refuses (tenant-ledger.ts).
  QUOTA_RELEASES_MIGRATION,
];
