/*
 * What the Worker's layers (src/http) use of the objects' side, beside the public face (`index.ts`):
 * logs, metrics, quotas, object names, and what the stream routes hand their objects.
 */

export { blobKey } from "./blobs/blob-store";
export { verifyBlobUrl } from "./blobs/blob-urls";
export { SessionDirectory } from "./directory/session-directory";
export type { DurableEnv } from "./env";
export type { LogFields, LogValue } from "./log-line";
export { errorSummary, logBackgroundFailure, logLine, REQUEST_ID_HEADER, tenantHash } from "./log-line";
export type { MetricPoint } from "./metrics";
export { measuredSummarizer, writeMetric } from "./metrics";
export { sessionObjectName } from "./names";
export type { ObjectCalls } from "./object-calls";
export { Jurisdiction, tenantJurisdiction } from "./placement/jurisdictions";
export { objectEnv, placedEnv, tenantEnv } from "./placement/placed-env";
export { checkPlacement } from "./placement/placement-check";
export { TenantPlacement } from "./placement/tenant-placement";
export type { Quotas } from "./quotas";
export { DEFAULT_OPEN_GENERATIONS, quotasFor } from "./quotas";
export { DurableRepo } from "./router/repo";
export { SessionObjectStorage } from "./router/session-object-storage";
export type { TenantUsage } from "./router/tenant-usage";
export { dispositionFor, SERVED_BYTES_HEADERS } from "./served-bytes";
export { SOCKET_TICKET_HEADER } from "./session/event-sockets";
export { GENERATION_ID_HEADER } from "./session/generations";
export { SessionObject } from "./session/session-object";
export { numberSetting } from "./settings";
export {
  ANSWER_HEADERS,
  MAX_APPEND_BYTES,
  MAX_PATH_CHARS,
  REQUEST_HEADERS,
  readBody,
  refuseBody,
  SAFETY_HEADERS,
  STREAM_KEY_HEADER,
  STREAM_TENANT_HEADER,
  StreamObject,
  streamKeyOf,
  streamObjectName,
} from "./stream";
export { tenantKey } from "./tenant-key";
export { partlyApplied, transientError, unavailable } from "./transient";
export type { ContextLines, EntryPlace, ShownEntries } from "./types";
