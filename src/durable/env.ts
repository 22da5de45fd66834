import type { SummarizerConfig } from "../core/internal";
import type { SessionDirectory } from "./directory/session-directory";
import type { SessionObject } from "./session/session-object";

/** The bindings the Durable Objects and the router need (see wrangler.toml and docs/configuration.md). */
export interface DurableEnv extends SummarizerConfig {
  SESSIONS: DurableObjectNamespace<SessionObject>;
  DIRECTORY: DurableObjectNamespace<SessionDirectory>;
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
  /** Bytes of storage at which a session takes no more entries (default 9e9; see storage-ceiling.ts). */
  SESSION_FULL_BYTES?: string;
}
