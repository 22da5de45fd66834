import { SessionError } from "../errors";
import type { AssistantMessage } from "../messages";

/** The request shapes a context can be given in, and the message shapes an append can come in. */
export const CONTEXT_FORMATS = [
  "openai-chat",
  "openai-responses",
  "anthropic",
  "gemini",
  "ai-sdk",
  "ai-sdk-ui",
] as const;
export type ContextFormat = (typeof CONTEXT_FORMATS)[number];

export const MESSAGE_FORMATS = ["openai-chat", "openai-responses", "anthropic", "gemini", "ai-sdk"] as const;
export type MessageFormat = (typeof MESSAGE_FORMATS)[number];

/**
 * The model a request is for. `api` names the wire protocol in pi-ai's terms (`anthropic-messages`,
 * `openai-completions`, `openai-responses`, `google-generative-ai`, …): thinking signatures and
 * encrypted reasoning are replayed only to the provider, API and model that produced them.
 */
export interface TargetModel {
  provider: string;
  modelId: string;
  /** Absent: any API of that provider and model counts as the same (the AI SDK picks its own). */
  api?: string;
  /** Whether the model reads images (default true); without it, images become a short note. */
  imageInput?: boolean;
}

/** pi-ai's name of the API each native format speaks, recorded on the messages read from it. */
export const FORMAT_API: Record<Exclude<ContextFormat, "ai-sdk" | "ai-sdk-ui">, string> = {
  "openai-chat": "openai-completions",
  "openai-responses": "openai-responses",
  anthropic: "anthropic-messages",
  gemini: "google-generative-ai",
};

export function isContextFormat(value: unknown): value is ContextFormat {
  return typeof value === "string" && (CONTEXT_FORMATS as readonly string[]).includes(value);
}

export function isMessageFormat(value: unknown): value is MessageFormat {
  return typeof value === "string" && (MESSAGE_FORMATS as readonly string[]).includes(value);
}

/** A format named by a caller: `unsupported_format` unless it is one of `CONTEXT_FORMATS`. */
export function parseContextFormat(value: string): ContextFormat {
  if (isContextFormat(value)) return value;
  throw new SessionError("unsupported_format", `unknown format "${value}"`, {
    formats: [...CONTEXT_FORMATS],
  });
}

/**
 * `provider/modelId` as in `?model=anthropic/claude-sonnet-4-5`. The model id may itself hold
 * slashes (`openrouter/anthropic/claude-sonnet-4.5`): only the first one separates.
 */
export function parseModelRef(value: string): { provider: string; modelId: string } {
  const slash = value.indexOf("/");
  if (slash <= 0 || slash === value.length - 1) {
    throw new SessionError("invalid_request", 'model must be "<provider>/<modelId>"', { model: value });
  }
  return { provider: value.slice(0, slash), modelId: value.slice(slash + 1) };
}

/** The target with the API its format implies, unless the caller named one. */
export function targetForFormat(format: ContextFormat, model: TargetModel): TargetModel {
  if (model.api !== undefined || format === "ai-sdk" || format === "ai-sdk-ui") return model;
  return { ...model, api: FORMAT_API[format] };
}

/** Whether `message` came from the target model, so its opaque reasoning may be sent back to it. */
export function isSameModel(message: AssistantMessage, target: TargetModel): boolean {
  return (
    message.provider === target.provider &&
    message.model === target.modelId &&
    (target.api === undefined || message.api === target.api)
  );
}
