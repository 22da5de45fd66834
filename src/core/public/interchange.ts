/*
 * `cf-sessions/interchange`: sessions as files and back: this service's own format, pi's, Claude
 * Code's and Codex's (parsed to import, written to export), the format of a file told from its
 * text, what a sync of a growing file did, and a tenant's sessions as one stream.
 */

export type { ClaudeCodeExportOptions } from "../claude-code-export";
export { exportClaudeCode } from "../claude-code-export";
export { parseClaudeCode } from "../claude-code-format";
export type { CodexExportOptions } from "../codex-export";
export { exportCodex } from "../codex-export";
export { parseCodex } from "../codex-format";
export { detectFormat, parseImport } from "../import-formats";
export type { ExportFormat, ImportedSession, ImportFormat, ImportHeader, ParseOptions } from "../interchange";
export { EXPORT_FORMATS, IMPORT_FORMATS, ImportWarning } from "../interchange";
export { exportNative, NATIVE_FORMAT, parseNative } from "../native-format";
export { exportPi, PI_VERSION, parsePi } from "../pi-format";
export type { ImportedStreamStatus } from "../stream-backup";
export type { SyncResult, SyncStatus, SyncSummary } from "../sync-import";
export type { ImportedSessionStatus, TenantImportReport } from "../tenant-stream";
export { ExistingSessions, exportTenant, importTenant, TENANT_FORMAT } from "../tenant-stream";
