import type { SessionContext } from "../context";
import type { ImageContent, TextContent } from "../messages";
import { GEMINI_IMAGE_TYPES, imageTypeFor, unsupportedImageNote } from "./image-types";
import type { NormalAssistant, NormalToolResults } from "./normalize";
import { normalizeContext, resultParts, TOOL_IMAGE_PLACEHOLDER } from "./normalize";
import type { TargetModel } from "./target";
import { ANTHROPIC_IDS } from "./tool-call-ids";

/*
 * Gemini `generateContent`: `systemInstruction` and `contents` of role user / model. The function
 * responses of one turn are one user content, in call order (Gemini pairs them with the calls by
 * name and position). Parts of the model's own reply go back part for part with their thought
 * signatures; function calls another model made get Google's documented stand-in signature on
 * Gemini 3, which refuses a turn whose first function call has none.
 */

export interface GeminiBlob {
  mimeType: string;
  data: string;
}

export interface GeminiFunctionCall {
  name: string;
  args: Record<string, unknown>;
  id?: string;
}

export interface GeminiFunctionResponse {
  name: string;
  response: { output: string } | { error: string };
  id?: string;
  /** Images of the result, on models that read them there (Gemini 3 on). */
  parts?: Array<{ inlineData: GeminiBlob }>;
}

export type GeminiPart =
  | { text: string; thought?: true; thoughtSignature?: string }
  | { inlineData: GeminiBlob }
  | { functionCall: GeminiFunctionCall; thoughtSignature?: string }
  | { functionResponse: GeminiFunctionResponse };

export interface GeminiContent {
  role: "user" | "model";
  parts: GeminiPart[];
}

export interface GeminiRequest {
  /** The system prompt, when there is one (`config.systemInstruction` in `@google/genai`). */
  systemInstruction?: { parts: Array<{ text: string }> };
  contents: GeminiContent[];
}

/** Google's documented signature for function calls whose own signature is unknown. */
export const SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator";
export const GEMINI_TOOL_IMAGES_INTRO = "Tool result image:";

/** Gemini 3 on takes images inside a function response, and requires signatures on function calls. */
function isGemini3OrLater(modelId: string): boolean {
  const major = /^gemini(?:-live)?-(\d+)/i.exec(modelId)?.[1];
  return major === undefined ? /^gemini/i.test(modelId) : Number.parseInt(major, 10) >= 3;
}

/** Models other than Gemini served through Google's APIs pair calls and results by id only. */
function requiresToolCallIds(modelId: string): boolean {
  return modelId.startsWith("claude-") || modelId.startsWith("gpt-oss-");
}

/** Thought signatures are bytes, sent as base64; anything else would be refused. */
function validSignature(signature: string | undefined): string | undefined {
  if (!signature || signature.length % 4 !== 0) return undefined;
  return /^[A-Za-z0-9+/]+={0,2}$/.test(signature) ? signature : undefined;
}

/** An image Gemini reads as its blob; none for one of another type. */
function blob(image: ImageContent): GeminiBlob | undefined {
  const mimeType = imageTypeFor(image.mimeType, GEMINI_IMAGE_TYPES);
  return mimeType ? { mimeType, data: image.data } : undefined;
}

/** Gemini reads five image types; any other becomes a note rather than a refused request. */
function part(content: TextContent | ImageContent): GeminiPart {
  if (content.type === "text") return { text: content.text };
  const inlineData = blob(content);
  return inlineData ? { inlineData } : { text: unsupportedImageNote(content.mimeType) };
}

function modelContent(message: NormalAssistant, modelId: string): GeminiContent {
  const parts: GeminiPart[] = [];
  const withIds = requiresToolCallIds(modelId);
  // Gemini 3 checks the signature of the first function call of a turn (its own parallel calls
  // carry one on the first only): another model's calls all get the stand-in, the model's own
  // turn gets it on a first call that lost its signature.
  let needsSignature = isGemini3OrLater(modelId);
  for (const block of message.content) {
    if (block.type === "text") {
      const signature = validSignature(block.textSignature);
      parts.push(signature ? { text: block.text, thoughtSignature: signature } : { text: block.text });
    } else if (block.type === "thinking") {
      if (block.redacted || !block.thinking.trim()) continue;
      const signature = validSignature(block.thinkingSignature);
      parts.push(
        signature
          ? { thought: true, text: block.thinking, thoughtSignature: signature }
          : { thought: true, text: block.thinking },
      );
    } else {
      const call: GeminiFunctionCall = { name: block.name, args: block.arguments };
      if (withIds) call.id = block.id;
      const signature =
        validSignature(block.thoughtSignature) ?? (needsSignature ? SKIP_THOUGHT_SIGNATURE : undefined);
      if (message.sameModel) needsSignature = false;
      parts.push(signature ? { functionCall: call, thoughtSignature: signature } : { functionCall: call });
    }
  }
  return { role: "model", parts };
}

function responseContents(turn: NormalToolResults, modelId: string): GeminiContent[] {
  const inline = isGemini3OrLater(modelId) || !/^gemini/i.test(modelId);
  const withIds = requiresToolCallIds(modelId);
  const parts: GeminiPart[] = [];
  const separateImages: GeminiPart[] = [];
  for (const result of turn.results) {
    const { text, images } = resultParts(result.content);
    // An image Gemini does not read is a note in the response's text.
    const blobs = images.flatMap((image) => blob(image) ?? []);
    const notes = images.flatMap((image) => (blob(image) ? [] : [unsupportedImageNote(image.mimeType)]));
    const value =
      [text, ...notes].filter(Boolean).join("\n") || (blobs.length > 0 ? TOOL_IMAGE_PLACEHOLDER : "");
    const response: GeminiFunctionResponse = {
      name: result.toolName,
      response: result.isError ? { error: value } : { output: value },
    };
    if (withIds) response.id = result.toolCallId;
    if (blobs.length > 0 && inline) response.parts = blobs.map((inlineData) => ({ inlineData }));
    else for (const inlineData of blobs) separateImages.push({ inlineData });
    parts.push({ functionResponse: response });
  }
  const contents: GeminiContent[] = [{ role: "user", parts }];
  if (separateImages.length > 0) {
    contents.push({ role: "user", parts: [{ text: GEMINI_TOOL_IMAGES_INTRO }, ...separateImages] });
  }
  return contents;
}

/** `systemInstruction` and `contents` of a `generateContent` request for `context`, sent to `model`. */
export function toGemini(context: SessionContext, model: TargetModel): GeminiRequest {
  const { system, messages } = normalizeContext(context, "gemini", model, { ids: ANTHROPIC_IDS });
  const contents: GeminiContent[] = [];
  for (const message of messages) {
    if (message.role === "user") contents.push({ role: "user", parts: message.content.map(part) });
    else if (message.role === "assistant") {
      // A reply whose only part Gemini does not take (an empty signed thought) is left out.
      const content = modelContent(message, model.modelId);
      if (content.parts.length > 0) contents.push(content);
    } else for (const content of responseContents(message, model.modelId)) contents.push(content);
  }
  return system ? { systemInstruction: { parts: [{ text: system }] }, contents } : { contents };
}
