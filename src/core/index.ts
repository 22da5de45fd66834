/*
 * `cf-sessions`: the library's public face. Every name here is a promise (semver); the project's
 * own layers (the service, the backends, the client, the command line) import each core module
 * they use from that module.
 */

export type { CompactIfNeededOptions, CompactIfNeededResult } from "./agent";
export { compactIfNeeded } from "./agent";
export type { ClaudeCodeExportOptions } from "./claude-code-export";
export { exportClaudeCode } from "./claude-code-export";
export { parseClaudeCode } from "./claude-code-format";
export type { CodexExportOptions } from "./codex-export";
export { exportCodex } from "./codex-export";
export { parseCodex } from "./codex-format";
export type { CompactOptions, NavigateOptions } from "./compact-session";
export { NavigateResult } from "./compact-session";
export type {
  BranchSummaryPreparation,
  CompactionPreparation,
  CompactionSettings,
  OmittedHistory,
} from "./compaction";
export { DEFAULT_KEEP_RECENT_TOKENS, prepareBranchSummary, prepareCompaction } from "./compaction";
export type { BuildContextOptions, ContextSettings, EntryProjector, ModelRef } from "./context";
export { buildSessionContext, SessionContext } from "./context";
export type { ContextAnswer } from "./context-answer";
export { ContextDelta, FullContext } from "./context-answer";
export type {
  ActiveToolsChangeEntry,
  BranchSummaryEntry,
  CompactionEntry,
  ContextEditEntry,
  CustomEntry,
  CustomMessageEntry,
  LabelEntry,
  LeafEntry,
  MessageEntry,
  ModelChangeEntry,
  SessionInfoEntry,
  ThinkingLevelChangeEntry,
  TreeEntry,
  UsageEntry,
} from "./entries";
export { ENTRY_TYPES, EntryInput, EntryType, Id, SessionEntry, StoredEntry, Timestamp } from "./entries";
export type { ErrorBody, ErrorCode } from "./errors";
export { ERROR_STATUS, isErrorCode, SessionError } from "./errors";
export type { EntrySummary, LeafEvent, SessionEvent, TenantEvent } from "./events";
export type { FileLists } from "./file-lists";
export type {
  GenerationFormat,
  GenerationState,
  OpenGenerationBody,
  StoppedBy,
} from "./generations/generation-schemas";
export { GENERATION_FORMATS, GenerationInfo, MAX_GENERATION_BYTES } from "./generations/generation-schemas";
export { ID_PATTERN, isValidId, newId } from "./ids";
export { detectFormat, parseImport } from "./import-formats";
export type { ExportFormat, ImportedSession, ImportFormat, ImportHeader, ParseOptions } from "./interchange";
export { EXPORT_FORMATS, IMPORT_FORMATS, ImportWarning } from "./interchange";
export {
  DEFAULT_ENTRIES_PAGE,
  DEFAULT_SESSIONS_PAGE,
  LATEST_EXPIRES_AT,
  MAX_BATCH_ENTRIES,
  MAX_BODY_BYTES,
  MAX_ENTRIES_PAGE,
  MAX_ENTRY_BYTES,
  MAX_SESSIONS_PAGE,
  PREVIEW_CHARS,
} from "./limits";
export { LocationHint } from "./location";
export { MemoryRepo, MemoryStorage } from "./memory";
export type { Cost, OtherMessage, SummaryUsage, TextContent, ThinkingContent, ToolCall } from "./messages";
export {
  AgentMessage,
  AssistantMessage,
  contentText,
  ImageContent,
  isAssistantMessage,
  isToolResultMessage,
  isUserMessage,
  THINKING_LEVELS,
  ThinkingLevel,
  ToolResultMessage,
  Usage,
  UserMessage,
} from "./messages";
export { exportNative, NATIVE_FORMAT, parseNative } from "./native-format";
export { exportPi, PI_VERSION, parsePi } from "./pi-format";
export * from "./providers/public";
export type { SessionRepo } from "./repo";
export type {
  SearchHit,
  SessionMatch,
  SessionSearchOptions,
  SessionSearchPage,
  TenantSearchOptions,
  TenantSearchPage,
  TenantSearchResult,
} from "./search";
export { DEFAULT_SEARCH_HITS, MAX_SEARCH_HITS } from "./search";
export type {
  BranchSummaryFields,
  CompactionFields,
  ContextInOptions,
  ContextOptions,
  CustomMessageFields,
  EntryOptions,
  ProviderMessageOptions,
} from "./session";
export { Session } from "./session";
export {
  AutoCompactSettings,
  AutoCompactStatus,
  CreateSessionOptions,
  EntryQuery,
  ForkOptions,
  HeaderPatch,
  LeafAt,
  ListOptions,
  Metadata,
  ParentSession,
  Position,
  SessionHeader,
  SessionInfo,
  SessionPage,
  SessionPatch,
} from "./session-schemas";
export { SseReader } from "./sse";
export type { AppendOptions, AppendResult, ImportOptions, LeafOptions, SessionStorage } from "./storage";
export type { ImportedStreamStatus } from "./stream-backup";
export * from "./summarizers/public";
export type { SyncResult, SyncStatus, SyncSummary } from "./sync-import";
export type { SystemMessage } from "./system-messages";
export type { ImportedSessionStatus, TenantImportReport } from "./tenant-stream";
export { ExistingSessions, exportTenant, importTenant, TENANT_FORMAT } from "./tenant-stream";
export { estimateContextTokens, estimateTokens } from "./tokens";
export type { TreeNode } from "./tree";
export { treeToJson, walkTree } from "./tree";
