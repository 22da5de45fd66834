import { MIGRATIONS } from "../../src/durable/directory/directory-schema";

/*
 * A directory shard put back to the schema of an older release, for the tests that open one: what
 * undoes each migration of src/durable/directory/directory-schema.ts, by the version it makes. A
 * migration added there needs its undo here: `rollBackDirectory` refuses to run while one lacks it.
 */

const UNDO: readonly (readonly string[])[] = [
  // 1: the listing and the tombstones.
  ["DROP TABLE sessions", "DROP TABLE tombstones"],
  // 2: the search index, the shard's identity and retention.
  ["DROP TABLE session_text", "DROP TABLE shard"],
  // 3: the tenant's usage.
  [
    "DROP TRIGGER usage_on_insert",
    "DROP TRIGGER usage_on_update",
    "DROP TRIGGER usage_on_delete",
    "DROP TABLE usage",
  ],
  // 4: the quota ledger.
  ["DROP TABLE quota_claims", "DROP TABLE quota_ledger"],
  // 5: the blob ledger.
  ["DROP TABLE blob_owners", "DROP TABLE blobs"],
  // 6: the stream registry.
  ["DROP TABLE stream_listing"],
  // 7: each session's project.
  [
    "DROP INDEX sessions_by_project_updated",
    "DROP INDEX sessions_by_project_created",
    "ALTER TABLE sessions DROP COLUMN project",
  ],
  // 8: the quota ledger's totals.
  [
    "DROP TRIGGER quota_totals_on_insert",
    "DROP TRIGGER quota_totals_on_update",
    "DROP TRIGGER quota_totals_on_delete",
    "DROP TABLE quota_totals",
  ],
  // 9: the holders asked since the seed.
  ["ALTER TABLE quota_claims DROP COLUMN asked_since_seed"],
  // 10: the blobs being deleted.
  ["DROP INDEX blobs_deleting"],
  // 11: whether the shard knows the tenant's retention.
  ["ALTER TABLE shard DROP COLUMN retention_known"],
  // 12: tombstones by age.
  ["DROP INDEX tombstones_by_deleted"],
  // 13: the blob ledger's owners that gave their claims up.
  ["DROP TABLE blob_owners_released"],
  // 14: the streams by key.
  ["DROP INDEX stream_listing_by_key"],
  // 15: the quota ledger's releases.
  ["DROP TABLE quota_releases"],
];

/** Puts a directory shard's tables back to schema `version`, undoing every migration after it. */
export function rollBackDirectory(sql: SqlStorage, version: number): void {
  if (UNDO.length !== MIGRATIONS.length) {
    throw new Error(`directory-rollback.ts undoes ${UNDO.length} migrations of ${MIGRATIONS.length}`);
  }
  for (let undone = UNDO.length; undone > version; undone--) {
    for (const statement of UNDO[undone - 1] ?? []) sql.exec(statement);
  }
  sql.exec("DELETE FROM schema_version WHERE version > ?", version);
}
