export type { DurableEnv } from "./env";
export { sessionObjectName } from "./names";
export type { ContextStream } from "./repo";
export { DurableRepo, DurableSessionStorage } from "./repo";
export { SessionDirectory } from "./session-directory";
export { SessionObject } from "./session-object";
