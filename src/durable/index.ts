export type { DurableEnv } from "./env";
export { sessionObjectName } from "./names";
export { DurableRepo, SessionObjectStorage } from "./repo";
export { SessionDirectory } from "./session-directory";
export { SessionObject } from "./session-object";
