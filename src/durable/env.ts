import type { SummarizerConfig } from "../core";
import type { SessionDirectory } from "./session-directory";
import type { SessionObject } from "./session-object";

/** The bindings the Durable Objects and the router need (see wrangler.toml and README). */
export interface DurableEnv extends SummarizerConfig {
  SESSIONS: DurableObjectNamespace<SessionObject>;
  DIRECTORY: DurableObjectNamespace<SessionDirectory>;
  /** Milliseconds between a write and the directory hearing of it (default 1000). */
  DIRECTORY_SYNC_MS?: string;
}
