/*
 * Everything the core holds, for the project's own layers (the service, the backends, the client,
 * the command line, the viewer): planners, codecs and helpers the public face (`index.ts`) leaves out.
 */

export * from "./agent";
export * from "./append";
export * from "./blob-refs";
export * from "./branch";
export * from "./bytes";
export * from "./claude-code-export";
export * from "./claude-code-format";
export * from "./codex-export";
export * from "./codex-format";
export * from "./compact-session";
export * from "./compaction";
export * from "./compaction-cut";
export * from "./context";
export * from "./context-answer";
export * from "./context-edits";
export * from "./entries";
export * from "./errors";
export * from "./events";
export * from "./export-formats";
export * from "./file-lists";
export * from "./fork";
export * from "./framework-custom-messages";
export * from "./generations";
export * from "./header";
export * from "./ids";
export * from "./import-formats";
export * from "./info";
export * from "./interchange";
export * from "./json";
export * from "./leaf-tag";
export * from "./limits";
export * from "./location";
export * from "./memory";
export * from "./messages";
export * from "./native-format";
export * from "./ndjson";
export * from "./paging";
export * from "./pi-format";
export * from "./providers";
export * from "./repo";
export * from "./search";
export * from "./search-query";
export * from "./search-text";
export * from "./session";
export * from "./session-schemas";
export * from "./sse";
export * from "./storage";
export * from "./summarizers";
export * from "./sync-import";
export * from "./system-messages";
export * from "./tenant-stream";
export * from "./tokens";
export * from "./tree";
