/*
 * What the Worker's layers (src/http) use of the objects' side, beside the public face (`index.ts`):
 * logs, metrics, quotas and object names.
 */

export { SessionDirectory } from "./directory/session-directory";
export type { DurableEnv } from "./env";
export type { LogFields, LogValue } from "./log-line";
export { errorSummary, logBackgroundFailure, logLine, tenantHash } from "./log-line";
export type { MetricPoint } from "./metrics";
export { measuredSummarizer, writeMetric } from "./metrics";
export { sessionObjectName } from "./names";
export type { Quotas } from "./quotas";
export { quotasFor } from "./quotas";
export { DurableRepo } from "./router/repo";
export { SessionObjectStorage } from "./router/session-object-storage";
export type { TenantUsage } from "./router/tenant-usage";
export { SessionObject } from "./session/session-object";
export { transientError } from "./transient";
