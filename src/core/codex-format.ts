import type { LogLine } from "./agent-log";
import {
  agentSession,
  asString,
  count,
  derivedSessionId,
  entryTimestamp,
  isRecord,
  readLogLines,
  thinkingLevel,
  without,
} from "./agent-log";
import type { ExportRecord } from "./codex-items";
import {
  callArguments,
  exportRecord,
  lineIdPrefix,
  normalized,
  OUTPUT_ITEMS,
  outputText,
  readContent,
  toolArguments,
  toolOutput,
} from "./codex-items";
import type { MessageEntry, SessionEntry } from "./entries";
import { SessionError } from "./errors";
import type { ImportedSession, ParseOptions } from "./interchange";
import type { AssistantMessage, TextContent, ThinkingLevel } from "./messages";
import { blockText, usage } from "./messages";
import { lineError } from "./ndjson";
import { hasToolCall, toolResultMessage } from "./providers/incoming";
import { COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX } from "./providers/pi-messages";
import { messageSignature } from "./providers/responses-signatures";
import { sameJson } from "./source-lines";

/*
 * OpenAI Codex CLI sessions (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): a linear log of
 * `{timestamp, type, payload}` lines (`session_meta`, `response_item`, `event_msg`,
 * `turn_context`, `compacted`); before `payload` lines existed, a bare session meta line came
 * first and response items followed bare. One chain. The output items of one model response
 * (reasoning, text, tool calls) become one assistant message, in pi's openai-responses encoding
 * (a reasoning item is the thinking block's signature), so the session can be continued. Lines
 * that are not messages are kept as `custom` entries ("codex:<type>[:<payload type>]", the line
 * as `data`); message entries keep what they do not hold of their lines in `sourceLines` (see
 * source-lines.ts), so the export writes the file back as it was.
 */

const PREFIX = "codex";
const API = "openai-responses";

/** User messages Codex sends at the start of every session: not the user's own words. */
const SESSION_PREFIXES = ["<environment_context>", "<user_instructions>", "# AGENTS.md instructions"];
/** What Codex keeps of the user's messages when it compacts locally (approximate tokens). */
const KEPT_USER_TOKENS = 20_000;

class CodexReader {
  readonly entries: SessionEntry[] = [];
  readonly lines: number[] = [];
  readonly #provider: string;
  readonly #toolNames = new Map<string, string>();
  #model: string | undefined;
  #thinking: ThinkingLevel = "off";
  #reply: MessageEntry | undefined;
  /** The model's latest reply while nothing but events followed it: the one a turn's end marks. */
  #lastReply: AssistantMessage | undefined;
  #unmetered: AssistantMessage | undefined;
  #pendingUsage: AssistantMessage["usage"] | undefined;
  #tokens = 0;
  #timestamp: string;
  #tip: string | null = null;

  readonly #linesApart: boolean;
  /** What the id of each line's entry starts with, before `l<n>`. */
  readonly #idPrefix: string;

  constructor(provider: string, createdAt: string, linesApart: boolean, idPrefix: string) {
    this.#provider = provider;
    this.#timestamp = createdAt;
    this.#linesApart = linesApart;
    this.#idPrefix = idPrefix;
  }

  get leafId(): string | null {
    return this.#tip;
  }

  #push(line: number, entry: Record<string, unknown>): MessageEntry {
    const full = { ...entry, parentId: this.#tip, timestamp: this.#timestamp } as SessionEntry;
    this.entries.push(full);
    this.lines.push(line);
    this.#tip = full.id;
    return full as MessageEntry;
  }

  #custom(line: LogLine, id: string, value: Record<string, unknown>): void {
    const payload = isRecord(value.payload) ? value.payload : {};
    const kind = typeof payload.type === "string" && value.type !== "session_meta" ? `:${payload.type}` : "";
    const type = String(value.type ?? value.record_type ?? "line");
    this.#push(line.line, {
      type: "custom",
      id,
      customType: `${PREFIX}:${type}${kind}`,
      data: value,
      ...this.#numbered(line, id),
    });
  }

  /**
   * Where an entry records its line: the entry named after its line (`l<n>`) does; entries read
   * from inside a line (a compaction's replacement history) belong to that line's entry.
   */
  #numbered(line: LogLine, id: string): { sourceLineNumbers?: number[] } {
    return id === this.#lineId(line) ? { sourceLineNumbers: [line.line] } : {};
  }

  #lineId(line: LogLine): string {
    return this.idOfLine(line.line);
  }

  /** The id of the entry the line numbered `n` is read as. */
  idOfLine(n: number): string {
    return `${this.#idPrefix}l${n}`;
  }

  read(line: LogLine, value: Record<string, unknown>, id = this.#lineId(line)): void {
    this.#timestamp = entryTimestamp(value.timestamp, this.#timestamp);
    const payload = isRecord(value.payload) ? value.payload : undefined;
    // The lines whose payload becomes entries of their own; every other line is kept as custom.
    const reader =
      value.type === "response_item"
        ? this.#item
        : value.type === "turn_context"
          ? this.#turnContext
          : value.type === "compacted"
            ? this.#compacted
            : undefined;
    if (reader && payload) {
      // A turn's context or a compaction ends the reply being read; a response item may continue it.
      if (reader !== this.#item) {
        this.#reply = undefined;
        this.#lastReply = undefined;
      }
      reader.call(this, line, value, payload, id);
      return;
    }
    if (value.type === "event_msg" && payload?.type === "token_count" && isRecord(payload.info)) {
      this.#tokenCount(payload.info);
    }
    if (value.type === "event_msg" && (payload?.type === "turn_aborted" || payload?.type === "error")) {
      this.#turnStopped(payload);
    }
    this.#custom(line, id, value);
  }

  #timestampMs(): number {
    return Date.parse(this.#timestamp);
  }

  #item(line: LogLine, value: Record<string, unknown>, payload: Record<string, unknown>, id: string): void {
    const type = payload.type;
    // The line as kept beside the entry: the payload without `key` (or with `key` as given).
    const rest = (key?: string, kept?: unknown) => {
      const payloadKept = without(payload, ...(key === undefined ? [] : [key]));
      return {
        ...value,
        payload: kept === undefined ? payloadKept : { ...payloadKept, [key as string]: kept },
      };
    };
    if (type === "message" && payload.role === "assistant") {
      const { parts, kept } = readContent(payload.content, true);
      const signature =
        typeof payload.id === "string" ? messageSignature(payload.id, asString(payload.phase)) : undefined;
      const content = parts.map((p) => (signature ? { ...p, textSignature: signature } : p)) as TextContent[];
      this.#output(line, id, content, Array.isArray(payload.content) ? rest("content", kept) : rest());
      return;
    }
    if (OUTPUT_ITEMS.has(type as string)) {
      if (type === "reasoning") {
        const summary = Array.isArray(payload.summary) ? payload.summary : [];
        const reasoning = Array.isArray(payload.content) ? payload.content : [];
        const join = (parts: unknown[]) =>
          parts
            .map((p) => (isRecord(p) && typeof p.text === "string" ? p.text : ""))
            .filter(Boolean)
            .join("\n\n");
        const thinking = join(summary) || join(reasoning);
        // The whole item is the signature, as pi keeps it, so it can be sent back as it came.
        this.#output(line, id, [{ type: "thinking", thinking, thinkingSignature: JSON.stringify(payload) }], {
          ...value,
          payload: { type },
        });
        return;
      }
      const callId = asString(payload.call_id) ?? asString(payload.id) ?? id;
      const name = type === "local_shell_call" ? "local_shell" : (asString(payload.name) ?? "unknown");
      const field =
        type === "local_shell_call" ? "action" : type === "custom_tool_call" ? "input" : "arguments";
      const raw = payload[field];
      const parsed = type === "custom_tool_call" ? undefined : toolArguments(raw);
      const args = parsed ?? (type === "custom_tool_call" ? { input: raw } : {});
      this.#toolNames.set(callId, name);
      // The arguments are kept only when writing them back would not give them as they were.
      const given = sameJson(callArguments(type, args).value, raw);
      this.#output(
        line,
        id,
        [{ type: "toolCall", id: callId, name, arguments: args }],
        given ? rest(field) : rest(),
      );
      return;
    }
    if (type === "function_call_output" || type === "custom_tool_call_output") {
      this.#reply = undefined;
      this.#lastReply = undefined;
      const callId = asString(payload.call_id) ?? "";
      const { content, isError, details } = outputText(payload.output, []);
      const toolName = this.#toolNames.get(callId) ?? "unknown";
      const message = toolResultMessage(callId, toolName, content, isError, this.#timestampMs());
      if (details !== undefined) message.details = details;
      const given = sameJson(toolOutput(message), payload.output);
      this.#push(line.line, {
        type: "message",
        id,
        message,
        sourceLines: [given ? rest("output") : rest()],
        ...this.#numbered(line, id),
      });
      return;
    }
    if (type === "message") {
      this.#reply = undefined;
      this.#lastReply = undefined;
      const { parts, kept } = readContent(payload.content, false);
      // Developer and system messages (instructions Codex adds to the history) keep their role.
      const message = {
        role: asString(payload.role) ?? "user",
        content: parts,
        timestamp: this.#timestampMs(),
      };
      this.#push(line.line, {
        type: "message",
        id,
        message,
        sourceLines: [Array.isArray(payload.content) ? rest("content", kept) : rest()],
        ...this.#numbered(line, id),
      });
      return;
    }
    this.#custom(line, id, value);
  }

  /** Adds output of the model to the reply being read, or starts one. */
  #output(
    line: LogLine,
    id: string,
    parts: AssistantMessage["content"],
    kept: Record<string, unknown>,
  ): void {
    const open = this.#linesApart ? undefined : this.#reply;
    if (open) {
      const message = open.message as AssistantMessage;
      this.#lastReply = message;
      message.content.push(...parts);
      if (hasToolCall(parts)) message.stopReason = "toolUse";
      (open.sourceLines as unknown[]).push(kept);
      const numbers = this.#numbered(line, id).sourceLineNumbers;
      if (numbers) (open.sourceLineNumbers as number[]).push(...numbers);
      return;
    }
    const message: AssistantMessage = {
      role: "assistant",
      content: parts,
      api: API,
      provider: this.#provider,
      model: this.#model ?? "unknown",
      usage: this.#pendingUsage ?? usage(0, 0, 0, 0),
      stopReason: hasToolCall(parts) ? "toolUse" : "stop",
      timestamp: this.#timestampMs(),
    };
    this.#lastReply = message;
    this.#unmetered = this.#pendingUsage ? undefined : message;
    this.#pendingUsage = undefined;
    this.#reply = this.#push(line.line, {
      type: "message",
      id,
      message,
      sourceLines: [kept],
      ...this.#numbered(line, id),
    });
  }

  /**
   * A finished response's token count. Codex writes it after the response's items in some
   * versions and before them in others: it goes to the newest reply still without one, else to
   * the next reply.
   */
  #tokenCount(info: Record<string, unknown>): void {
    this.#reply = undefined;
    const last = isRecord(info.last_token_usage) ? info.last_token_usage : undefined;
    if (!last) return;
    this.#tokens = count(last.total_tokens) || this.#tokens;
    const cached = count(last.cached_input_tokens);
    const counted = usage(
      Math.max(0, count(last.input_tokens) - cached),
      count(last.output_tokens),
      cached,
      count(last.cache_write_input_tokens),
      count(last.total_tokens) || undefined,
    );
    // Read a line at a time, a count cannot tell the reply it belongs to (before or after it).
    if (this.#linesApart) return;
    if (this.#unmetered) {
      this.#unmetered.usage = counted;
      this.#unmetered = undefined;
    } else this.#pendingUsage = counted;
  }

  /**
   * A turn that ended without finishing: the model's reply it ended on (no tool output or message
   * after it) stopped (`turn_aborted`) or failed (`error`). Read a line at a time, the reply was
   * read already and stays as it was.
   */
  #turnStopped(payload: Record<string, unknown>): void {
    const reply = this.#lastReply;
    this.#reply = undefined;
    this.#lastReply = undefined;
    if (!reply || this.#linesApart) return;
    if (payload.type === "turn_aborted") {
      reply.stopReason = "aborted";
      return;
    }
    reply.stopReason = "error";
    reply.errorMessage = asString(payload.message) ?? "";
  }

  #turnContext(
    line: LogLine,
    value: Record<string, unknown>,
    payload: Record<string, unknown>,
    id: string,
  ): void {
    const model = asString(payload.model);
    if (model !== undefined && model !== this.#model) {
      this.#model = model;
      this.#push(line.line, {
        type: "model_change",
        id: `${id}:model`,
        provider: this.#provider,
        modelId: model,
      });
    }
    const mode = isRecord(payload.collaboration_mode) ? payload.collaboration_mode : {};
    const settings = isRecord(mode.settings) ? mode.settings : {};
    const level = thinkingLevel(payload.effort ?? settings.reasoning_effort);
    if (level !== undefined && level !== this.#thinking) {
      this.#thinking = level;
      this.#push(line.line, { type: "thinking_level_change", id: `${id}:thinking`, thinkingLevel: level });
    }
    this.#custom(line, id, value);
  }

  /**
   * Codex replaced its history: the compaction, then what it sent the model from then on besides
   * the summary (the replacement history it wrote, less the user message that is the summary, or,
   * when it wrote none, the user's latest messages as it keeps them).
   */
  #compacted(
    line: LogLine,
    value: Record<string, unknown>,
    payload: Record<string, unknown>,
    id: string,
  ): void {
    const since = this.#userMessagesSinceCompaction();
    const summary = asString(payload.message);
    // The summary as a user message in the replacement history: what the compaction stands for.
    const isSummary = (item: unknown) => summary !== undefined && summaryItem(item, summary);
    // Kept: the payload without its summary, its replacement history a hole for each item read
    // (the summary's item as written).
    const held = without(payload, ...(summary === undefined ? [] : ["message"]));
    if (Array.isArray(payload.replacement_history)) {
      held.replacement_history = payload.replacement_history.map((item) =>
        isRecord(item) && !isSummary(item) ? {} : item,
      );
    }
    this.#push(line.line, {
      type: "compaction",
      id,
      summary: summary ?? "",
      tokensBefore: this.#tokens,
      sourceLines: [{ ...value, payload: held }],
      ...this.#numbered(line, id),
    });
    if (Array.isArray(payload.replacement_history)) {
      payload.replacement_history.forEach((item, index) => {
        if (isRecord(item) && !isSummary(item))
          this.#item(
            line,
            { timestamp: value.timestamp, type: "response_item", payload: item },
            item,
            `${id}:${index + 1}`,
          );
      });
      this.#reply = undefined;
      return;
    }
    let budget = KEPT_USER_TOKENS;
    const kept: string[] = [];
    for (let i = since.length - 1; i >= 0; i--) {
      const message = since[i] as string;
      const tokens = Math.ceil(message.length / 4);
      if (tokens > budget) break;
      kept.unshift(message);
      budget -= tokens;
    }
    kept.forEach((message, index) => {
      this.#push(line.line, {
        type: "message",
        id: `${id}:${index + 1}`,
        message: { role: "user", content: [{ type: "text", text: message }], timestamp: this.#timestampMs() },
      });
    });
  }

  /** The user's own messages since the last compaction, as Codex collects them when it compacts. */
  #userMessagesSinceCompaction(): string[] {
    const found: string[] = [];
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i] as SessionEntry;
      if (entry.type === "compaction") break;
      if (entry.type !== "message" || entry.message.role !== "user") continue;
      const message = blockText((entry.message as { content?: unknown }).content);
      if (message && !SESSION_PREFIXES.some((prefix) => message.startsWith(prefix))) found.unshift(message);
    }
    return found;
  }
}

/** The text pi sends a model for a compaction's summary. */
function wrappedSummary(summary: string): string {
  return COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX;
}

/**
 * Whether a replacement history item is the compaction's summary as a user message: its text the
 * summary (as Codex writes it) or the summary in pi's wrapper (as the export writes it).
 */
function summaryItem(item: unknown, summary: string): boolean {
  if (summary === "" || !isRecord(item) || item.type !== "message" || item.role !== "user") return false;
  const content = Array.isArray(item.content) ? item.content : [];
  const [only] = content;
  if (content.length !== 1 || !isRecord(only) || only.type !== "input_text") return false;
  return only.text === summary || only.text === wrappedSummary(summary);
}

/** How the export a rollout was made from was made, read from the entry of its first `session_meta`. */
export function recordedExport(entries: readonly SessionEntry[]): ExportRecord | undefined {
  const meta = entries.find(
    (entry) => entry.type === "custom" && entry.customType === `${PREFIX}:session_meta`,
  );
  const data = meta?.type === "custom" && isRecord(meta.data) ? meta.data : undefined;
  return isRecord(data?.payload) ? exportRecord(data.payload) : undefined;
}

/** The provider a rollout's `session_meta` stands for when it names none. */
const CODEX_DEFAULT_PROVIDER = "openai";

/** A Codex CLI rollout as a session: id `codex-<session id>`, one chain, the head its last entry. */
export function parseCodex(text: string, options: ParseOptions = {}): ImportedSession {
  const { lines, warnings } = readLogLines(text);
  const values = lines.map(normalized);
  const metaIndex = values.findIndex((v) => v.type === "session_meta" && isRecord(v.payload));
  const metaLine = lines[metaIndex];
  if (metaIndex < 0 || !metaLine)
    throw lineError(lines[0]?.line ?? 1, "no session_meta line: not a Codex session");
  const meta = values[metaIndex]?.payload as Record<string, unknown>;
  const sourceId = typeof meta.id === "string" ? meta.id : undefined;
  if (sourceId === undefined) throw lineError(metaLine.line, "session_meta without an id");
  const id = derivedSessionId(PREFIX, sourceId, metaLine.line);
  const createdAt = entryTimestamp(
    meta.timestamp,
    entryTimestamp(values[metaIndex]?.timestamp, new Date(0).toISOString()),
  );
  const provider = asString(meta.model_provider) ?? CODEX_DEFAULT_PROVIDER;

  const reader = new CodexReader(
    provider,
    createdAt,
    options.linesApart === true,
    lineIdPrefix(exportRecord(meta)),
  );
  for (const [index, line] of lines.entries()) {
    try {
      reader.read(line, values[index] as Record<string, unknown>);
    } catch (error) {
      // JSON a line carries as text (tool arguments, wrapped output) refused: the file, at that line.
      throw error instanceof SessionError &&
        error.code === "invalid_request" &&
        !/^line \d+:/.test(error.message)
        ? lineError(line.line, error.message)
        : error;
    }
  }

  // The name Codex gave the thread (it may rename it): the last one is the session's name.
  const name = values
    .map((v, index) => {
      const payload = v.type === "event_msg" && isRecord(v.payload) ? v.payload : undefined;
      const value =
        payload?.type === "thread_name_updated" ? asString(payload.thread_name)?.trim() : undefined;
      const line = (lines[index] as LogLine).line;
      return value ? { value, line, entryId: reader.idOfLine(line) } : undefined;
    })
    .filter((n) => n !== undefined)
    .at(-1);
  const base = meta.base_instructions;
  const fields = {
    id: sourceId,
    cwd: asString(meta.cwd),
    cliVersion: asString(meta.cli_version),
    originator: asString(meta.originator),
    source: meta.source,
    modelProvider: asString(meta.model_provider),
    git: isRecord(meta.git) ? meta.git : undefined,
  };
  const systemPrompt = isRecord(base) ? asString(base.text) : asString(base);
  return agentSession("codex", { id, createdAt, name, systemPrompt }, fields, reader, warnings);
}

/** The provider a session read from a rollout recorded, or undefined for one not read from a rollout. */
export function codexProviderOf(metadata: Record<string, unknown> | undefined): string | undefined {
  const codex = metadata?.codex;
  if (!isRecord(codex)) return undefined;
  return asString(codex.modelProvider) ?? CODEX_DEFAULT_PROVIDER;
}

/**
 * A parsed rollout as if its `session_meta` named `provider`: every model change and reply the
 * parser gave the file's provider gets this one. `pull` puts the local Codex's provider in a
 * rollout so `codex resume` lists it; a sync reads the rollout with the provider the session
 * stored, so the entries it holds already are the file's again.
 */
export function withCodexProvider(file: ImportedSession, provider: string): ImportedSession {
  const read = codexProviderOf(file.header.metadata);
  if (read === undefined || read === provider) return file;
  const entries = file.entries.map((entry): SessionEntry => {
    if (entry.type === "model_change" && entry.provider === read) return { ...entry, provider };
    if (entry.type === "message" && entry.message.role === "assistant" && entry.message.provider === read)
      return { ...entry, message: { ...entry.message, provider } };
    return entry;
  });
  return { ...file, entries };
}
