export { SAFETY_HEADERS } from "./answers";
export { readBody, refuseBody } from "./body";
export { STREAM_ROUTE, streamKeyOf, streamObjectName } from "./paths";
export {
  ANSWER_HEADERS,
  LONG_POLL_MS,
  MAX_APPEND_BYTES,
  MAX_CONTENT_TYPE_CHARS,
  MAX_FORK_DEPTH,
  MAX_PATH_CHARS,
  MAX_PRODUCER_ID_CHARS,
  MAX_STREAM_SEQ_CHARS,
  MAX_TTL_SECONDS,
  READ_PAGE_BYTES,
  REQUEST_HEADERS,
  SSE_MAX_MS,
} from "./protocol";
export type { ForkPoint, ForkPointRequest, RecordPage, StreamSources } from "./sources";
export type { StreamState } from "./store";
export { StreamStore } from "./store";
export { STREAM_KEY_HEADER, STREAM_TENANT_HEADER, StreamObject } from "./stream-object";
export { DurableStreams } from "./streams";
