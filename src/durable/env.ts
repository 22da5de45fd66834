import type { SummarizerConfig } from "../core/summarizers";
import type { SessionDirectory } from "./directory/session-directory";
import type { TenantPlacement } from "./placement/tenant-placement";
import type { SessionObject } from "./session/session-object";
import type { StreamObject } from "./stream/stream-object";

/** The bindings the Durable Objects and the router need (see wrangler.toml and docs/configuration.md). */
export interface DurableEnv extends SummarizerConfig {
  SESSIONS: DurableObjectNamespace<SessionObject>;
  DIRECTORY: DurableObjectNamespace<SessionDirectory>;
  /** One object per tenant and stream path (`/v1/stream/…`); unbound, streams answer 503 `misconfigured`. */
  STREAMS?: DurableObjectNamespace<StreamObject>;
  /** Milliseconds between a write and the directory hearing of it (default 1000). */
  DIRECTORY_SYNC_MS?: string;
  /** Per-tenant quotas as JSON (see quotas.ts and docs/limits.md, "Quotas"); unset, nothing is limited. */
  QUOTAS?: string;
  /** Workers Analytics Engine dataset for metrics (see metrics.ts); unset, none are written. */
  METRICS?: AnalyticsEngineDataset;
  /** Shards of each tenant's directory (default 1, at most 64); it may grow, never shrink. */
  DIRECTORY_SHARDS?: string;
  /** Seconds a deleted session can be restored (default 604800, seven days); then it is purged. */
  RECOVERY_WINDOW_SECONDS?: string;
  /** Seconds a generation may go without an append before the alarm stops it (default 300). */
  GENERATION_ABANDON_SECONDS?: string;
  /** Seconds a finished or stopped generation's stream stays readable (default 3600). */
  GENERATION_RETAIN_SECONDS?: string;
  /** Bytes of entries one page of a fork's background copy carries (default and most 2 MiB; fork-copy.ts). */
  FORK_COPY_PAGE_BYTES?: string;
  /** Milliseconds between the steps of a fork's background copy (default 10). */
  FORK_COPY_PAUSE_MS?: string;
  /** Bytes of storage at which a session takes no more entries (default 9e9; see schema.ts). */
  SESSION_FULL_BYTES?: string;
  /** Tenants pinned to a jurisdiction, as JSON: `{"<tenant>": "eu" | "fedramp"}` (placement/jurisdictions.ts). */
  TENANT_JURISDICTIONS?: string;
  /** Where each tenant was first placed, so a changed pin cannot split it (placement/tenant-placement.ts). */
  PLACEMENTS?: DurableObjectNamespace<TenantPlacement>;
  /** R2 bucket of the blobs of unpinned tenants; unset, blobs stay in the sessions' SQLite. */
  BLOBS?: R2Bucket;
  /** R2 bucket (created in the `eu` jurisdiction) of the blobs of tenants pinned to `eu`. */
  BLOBS_EU?: R2Bucket;
  /** R2 bucket (created in the `fedramp` jurisdiction) of the blobs of tenants pinned to `fedramp`. */
  BLOBS_FEDRAMP?: R2Bucket;
  /** UTF-8 bytes from which an image or a tool output is stored as a blob (default 65536). */
  BLOB_MIN_BYTES?: string;
  /** Secret (at least 32 bytes) that signs the blob URLs of `?blobs=url`; unset, those are refused. */
  BLOB_URL_SECRET?: string;
  /** Seconds a signed blob URL stays valid (default 900). */
  BLOB_URL_TTL_SECONDS?: string;
}
