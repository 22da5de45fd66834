import { RemoteRepo } from "./remote-repo";
import type { ClientOptions } from "./transport";

// What the service answers beyond a session's own API: its events, generations, time travel and a
// search across the tenant's sessions.
export type { EntrySummary, LeafEvent, SessionEvent, TenantEvent } from "../core/events";
export type { GenerationFormat, GenerationState, StoppedBy } from "../core/generations/generation-schemas";
export { GenerationInfo } from "../core/generations/generation-schemas";
export type { TenantSearchOptions, TenantSearchPage, TenantSearchResult } from "../core/search";
export { LeafAt } from "../core/session-schemas";

export type {
  FollowOptions,
  GenerateOptions,
  GenerationChunk,
  GenerationResult,
} from "./generations";
export { GenerationWriter } from "./generations";
export type { FileImport, FileImportOptions, FileSync } from "./remote-repo";
export { RemoteRepo } from "./remote-repo";
export { RemoteSession } from "./remote-session";
export { RemoteStorage } from "./remote-storage";
export type { ClientOptions } from "./transport";
export { ConnectionError, retryAfterMs } from "./transport";
export type { WatchOptions } from "./watch";

/**
 * A client of the service: a `SessionRepo` whose sessions are the same `Session` API as
 * `MemoryRepo`'s or `JSONLRepo`'s, so agent code runs against the service unchanged. Works in
 * Node, browsers and Workers (pass a service binding's `fetch`).
 */
export function createClient(options: ClientOptions): RemoteRepo {
  return new RemoteRepo(options);
}
