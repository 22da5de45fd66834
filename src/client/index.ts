import { RemoteRepo } from "./remote-repo";
import type { ClientOptions } from "./transport";

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
