import type { AgentMessage, AssistantMessage, ToolResultMessage, UserMessage } from "../../src/core/messages";

let clock = Date.UTC(2026, 0, 1);

export function user(text: string): UserMessage {
  return { role: "user", content: text, timestamp: clock++ };
}

export function assistant(
  text: string,
  options: {
    provider?: string;
    model?: string;
    toolCalls?: Array<{ id: string; name: string; arguments: Record<string, unknown> }>;
  } = {},
): AssistantMessage {
  return {
    role: "assistant",
    content: [
      { type: "text", text },
      ...(options.toolCalls ?? []).map((call) => ({ type: "toolCall" as const, ...call })),
    ],
    api: "openai-completions",
    provider: options.provider ?? "openai",
    model: options.model ?? "gpt-test",
    usage: {
      input: 10,
      output: 5,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 15,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: options.toolCalls?.length ? "toolUse" : "stop",
    timestamp: clock++,
  };
}

export function toolResult(toolCallId: string, toolName: string, text: string): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId,
    toolName,
    content: [{ type: "text", text }],
    isError: false,
    timestamp: clock++,
  };
}

export function messageEntry(message: AgentMessage, extra: Record<string, unknown> = {}) {
  return { type: "message" as const, message, ...extra };
}

/** A pi session file (version 3) holding a chain of messages, one line each, as pi appends them. */
export class PiFile {
  readonly id: string;
  readonly #lines: string[];
  #parent: string | null = null;

  constructor(id: string) {
    this.id = id;
    this.#lines = [
      JSON.stringify({
        type: "session",
        version: 3,
        id,
        timestamp: "2026-01-01T00:00:00.000Z",
        cwd: "/work",
      }),
    ];
  }

  /** Appends a message line under the previous one. */
  message(id: string, message: AgentMessage): this {
    const timestamp = new Date(Date.UTC(2026, 0, 1) + this.#lines.length * 1000).toISOString();
    this.#lines.push(JSON.stringify({ type: "message", id, parentId: this.#parent, timestamp, message }));
    this.#parent = id;
    return this;
  }

  /** The file's text, with `tail` appended after the last newline (a line being written). */
  text(tail = ""): string {
    return `${this.#lines.join("\n")}\n${tail}`;
  }
}

/** A Claude Code transcript written line by line: one chain of messages, and titles beside it. */
export class ClaudeCodeLines {
  readonly sessionId: string;
  readonly #lines: string[] = [];
  #parent: string | null = null;

  constructor(sessionId: string) {
    this.sessionId = sessionId;
  }

  #line(type: string, message: Record<string, unknown>): this {
    const uuid = crypto.randomUUID();
    const timestamp = new Date(Date.UTC(2026, 0, 1) + this.#lines.length * 1000).toISOString();
    const fields = { parentUuid: this.#parent, sessionId: this.sessionId, cwd: "/work", timestamp };
    this.#lines.push(JSON.stringify({ ...fields, type, message, uuid }));
    this.#parent = uuid;
    return this;
  }

  user(text: string): this {
    return this.#line("user", { role: "user", content: text });
  }

  assistant(text: string): this {
    return this.#line("assistant", {
      id: `msg_${this.#lines.length}`,
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [{ type: "text", text }],
      stop_reason: "end_turn",
      usage: { input_tokens: 1, output_tokens: 1 },
    });
  }

  /** A `custom-title` line: Claude Code names (or renames) the session. */
  title(name: string): this {
    this.#lines.push(JSON.stringify({ type: "custom-title", customTitle: name, sessionId: this.sessionId }));
    return this;
  }

  text(): string {
    return `${this.#lines.join("\n")}\n`;
  }
}
