export { JSONLRepo } from "./jsonl-repo";
export { JSONLStorage } from "./jsonl-storage";
export type { SessionMetadata } from "./metadata";
