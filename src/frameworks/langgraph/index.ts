export type { CfSessionsSaverOptions } from "./saver";
export { CfSessionsSaver } from "./saver";
