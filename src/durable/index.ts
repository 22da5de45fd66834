/*
 * `cf-sessions/durable`: the Durable Object classes to export from a Worker of one's own (bound as
 * SESSIONS, DIRECTORY, STREAMS and PLACEMENTS), `DurableRepo`, the sessions of one tenant over them,
 * and `checkPlacement`, which a Worker that pins tenants calls before it uses a tenant's repo.
 */

export { SessionDirectory } from "./directory/session-directory";
export type { DurableEnv } from "./env";
export { checkPlacement } from "./placement/placement-check";
export { TenantPlacement } from "./placement/tenant-placement";
export { DurableRepo } from "./router/repo";
export { SessionObject } from "./session/session-object";
export { StreamObject } from "./stream";
