export type { CfSessionsStoreOptions } from "./store";
export { CfSessionsStore } from "./store";
