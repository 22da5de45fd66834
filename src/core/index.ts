/*
 * `cf-sessions`: the library's public face, what an agent's code calls: sessions and the repos
 * that keep them, the entries and messages they hold, the contexts built from them, compaction,
 * and the errors. Every name here is a promise (semver). The rest of the package's promises are
 * entry points of their own, each a file of `core/public/` (`cf-sessions/formats`: model APIs;
 * `cf-sessions/interchange`: session files; `cf-sessions/compaction`: summarizers and what they
 * summarize), and the client, the backends and the adapters. The project's own layers
 * (the service, the backends, the client, the command line) import each core module they use
 * from that module.
 */

export type { CompactIfNeededOptions, CompactIfNeededResult } from "./agent";
export { compactIfNeeded } from "./agent";
export type { CompactOptions, NavigateOptions } from "./compact-session";
export { NavigateResult } from "./compact-session";
export type { BuildContextOptions, ContextSettings, EntryProjector, ModelRef } from "./context";
export { buildSessionContext, SessionContext } from "./context";
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
export { EntryInput, EntryType, Id, SessionEntry, StoredEntry } from "./entries";
export type { ErrorBody, ErrorCode } from "./errors";
export { isErrorCode, SessionError } from "./errors";
export { isValidId, newId } from "./ids";
export { LocationHint } from "./location";
export { MemoryRepo, MemoryStorage } from "./memory";
export type { TextContent, ThinkingContent, ToolCall } from "./messages";
export {
  AgentMessage,
  AssistantMessage,
  contentText,
  ImageContent,
  isAssistantMessage,
  isToolResultMessage,
  isUserMessage,
  ThinkingLevel,
  ToolResultMessage,
  Usage,
  UserMessage,
} from "./messages";
export { AppendEntryInput } from "./providers/entry-input";
export type { SessionRepo } from "./repo";
export type { HeaderMatch, SearchHit, SessionMatch, SessionSearchOptions, SessionSearchPage } from "./search";
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
  ListOptions,
  SessionHeader,
  SessionInfo,
  SessionPage,
  SessionPatch,
} from "./session-schemas";
export type { AppendOptions, AppendResult, ImportOptions, LeafOptions, SessionStorage } from "./storage";
export { estimateContextTokens, estimateTokens } from "./tokens";
export type { TreeNode } from "./tree";
export { walkTree } from "./tree";
