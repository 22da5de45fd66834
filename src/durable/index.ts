export type { DurableEnv } from "./env";
export { DurableRepo, DurableSessionStorage } from "./repo";
export { SessionDirectory } from "./session-directory";
export { SessionObject, sessionObjectName } from "./session-object";
