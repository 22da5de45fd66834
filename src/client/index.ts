import { RemoteRepo } from "./remote";
import type { ClientOptions } from "./transport";

export type { FileImport, FileImportOptions, FileSync } from "./remote";
export { RemoteRepo, RemoteSession, RemoteStorage } from "./remote";
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
