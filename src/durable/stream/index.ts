export { SAFETY_HEADERS } from "./answers";
export { STREAM_ROUTE, streamKeyOf, streamObjectName } from "./paths";
export { ANSWER_HEADERS, MAX_APPEND_BYTES, READ_PAGE_BYTES, REQUEST_HEADERS } from "./protocol";
export type { ForkPoint, ForkPointRequest, SharedRecord, StreamSources } from "./sources";
export type { StreamState } from "./store";
export { StreamStore } from "./store";
export {
  STREAM_KEY_HEADER,
  STREAM_REQUEST_ID_HEADER,
  STREAM_TENANT_HEADER,
  StreamObject,
} from "./stream-object";
export { DurableStreams } from "./streams";
