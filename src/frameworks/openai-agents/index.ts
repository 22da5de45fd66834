export type { CfSessionsSessionOptions } from "./session";
export { CfSessionsSession } from "./session";
