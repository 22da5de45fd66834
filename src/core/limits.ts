/** Size limits of entries, bodies and batches, enforced by every backend and by the HTTP edge. */
export const MAX_ENTRY_BYTES = 16 * 1024 * 1024;
export const MAX_BODY_BYTES = 32 * 1024 * 1024;
/** The longest line a streamed NDJSON body (an import of the tenant) may hold: an entry of the largest size, and room around it. */
export const MAX_NDJSON_LINE_BYTES = MAX_ENTRY_BYTES + 1024 * 1024;
export const MAX_BATCH_ENTRIES = 1000;
/**
 * The largest tenant stream one request may carry (`POST /v1/import`). It is read a line at a
 * time, so the size is bounded by time, not memory; Cloudflare's own request limit (100 MB on most
 * plans) comes first.
 */
export const MAX_TENANT_IMPORT_BYTES = 1024 * 1024 * 1024;
/**
 * The largest context converted to a model API's request (`?format=`), as the session's object
 * answers it in JSON: read whole to be converted, and past what model APIs take in one request.
 */
export const MAX_MODEL_CONTEXT_BYTES = 32 * 1024 * 1024;
/** The largest body one stream append (a generation's chunks, or a create's initial content) may carry: 1 MiB. */
export const MAX_APPEND_BYTES = 1024 * 1024;
export const DEFAULT_ENTRIES_PAGE = 100;
export const MAX_ENTRIES_PAGE = 1000;
export const DEFAULT_SESSIONS_PAGE = 50;
export const MAX_SESSIONS_PAGE = 200;
export const PREVIEW_CHARS = 200;
/**
 * The most tokens a compaction keeps (`keepRecentTokens`) and an automatic compaction's
 * `contextWindow`: past the largest context a model takes, and what bounds the end of a long
 * path a compaction reads whole.
 */
export const MAX_CONTEXT_TOKENS = 10_000_000;
/**
 * A session's system prompt and its metadata, each as JSON, and the characters of a session's name
 * or a label. Each is kept as one stored value (the platform stores no value over 2 MB in one
 * piece), and the header and the name are listed with the session.
 */
export const MAX_SYSTEM_PROMPT_BYTES = 1024 * 1024;
export const MAX_METADATA_BYTES = 256 * 1024;
export const MAX_NAME_CHARS = 64 * 1024;
/**
 * The latest `expiresAt` a session may have, and the latest end a stream's `Stream-Expires-At` or
 * `Stream-TTL` may give it. The platform's alarms stop at a date in the 2180s; a bound well before
 * it keeps every expiry schedulable.
 */
export const LATEST_EXPIRES_AT = "2100-01-01T00:00:00.000Z";
