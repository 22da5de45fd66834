import type { SessionContext } from "../context";
import { tryParseJson } from "../json";
import type { ImageContent, TextContent } from "../messages";
import type { NormalAssistant, NormalToolResult } from "./normalize";
import { normalizeContext, resultParts } from "./normalize";
import { messageIdentity } from "./responses-signatures";
import type { TargetModel } from "./target";
import { dataUrl } from "./text";
import { itemIdPart, OPENAI_RESPONSES_IDS } from "./tool-call-ids";

/*
 * OpenAI Responses: `instructions` and `input` items. A reply of the same model goes back item
 * for item: its reasoning items (with their encrypted content), its message items under their
 * ids, its function calls under their item ids. Another model's reply becomes a plain assistant
 * message and function calls without item ids, so OpenAI never pairs them with reasoning it did
 * not see.
 */

export type ResponsesInputContent =
  | { type: "input_text"; text: string }
  | { type: "input_image"; image_url: string; detail: "auto" };

export interface ResponsesReasoningItem {
  type: "reasoning";
  id: string;
  summary: Array<{ type: "summary_text"; text: string }>;
  content?: Array<{ type: "reasoning_text"; text: string }>;
  encrypted_content?: string | null;
}

export interface ResponsesOutputMessageItem {
  type: "message";
  role: "assistant";
  id: string;
  status: "completed";
  content: Array<{ type: "output_text"; text: string; annotations: [] }>;
  phase?: "commentary" | "final_answer";
}

export interface ResponsesFunctionCallItem {
  type: "function_call";
  call_id: string;
  name: string;
  arguments: string;
  /** The `fc_…` item id, for the model that made the call only. */
  id?: string;
}

export type ResponsesInputItem =
  | { role: "user"; content: ResponsesInputContent[] }
  | { role: "developer"; content: string }
  | { role: "assistant"; content: string }
  | ResponsesOutputMessageItem
  | ResponsesReasoningItem
  | ResponsesFunctionCallItem
  | { type: "function_call_output"; call_id: string; output: string | ResponsesInputContent[] };

export interface OpenAIResponsesRequest {
  /** The system prompt, when there is one. */
  instructions?: string;
  input: ResponsesInputItem[];
}

function content(part: TextContent | ImageContent): ResponsesInputContent {
  return part.type === "text"
    ? { type: "input_text", text: part.text }
    : { type: "input_image", image_url: dataUrl(part.mimeType, part.data), detail: "auto" };
}

/** The reasoning item a thinking signature holds (pi-ai keeps the whole item there). */
export function reasoningItem(signature: string | undefined): ResponsesReasoningItem | undefined {
  if (!signature?.startsWith("{")) return undefined;
  const item = tryParseJson(signature) as ResponsesReasoningItem | undefined;
  return item?.type === "reasoning" && typeof item.id === "string" ? item : undefined;
}

function assistantItems(message: NormalAssistant): ResponsesInputItem[] {
  const items: ResponsesInputItem[] = [];
  // A reasoning item must be followed by the item it reasoned toward: one left at the end of a
  // turn, or followed by another reasoning item, is refused ("provided without its required
  // following item"), so only the last of a run goes out, and only before a message or call.
  let reasoning: ResponsesReasoningItem | undefined;
  const emit = (item: ResponsesInputItem) => {
    if (reasoning) items.push(reasoning);
    reasoning = undefined;
    items.push(item);
  };
  for (const block of message.content) {
    if (block.type === "thinking") {
      const item = message.sameModel ? reasoningItem(block.thinkingSignature) : undefined;
      if (item) reasoning = item;
      else if (!block.redacted && block.thinking.trim()) emit({ role: "assistant", content: block.thinking });
    } else if (block.type === "text") {
      const identity = message.sameModel ? messageIdentity(block.textSignature) : undefined;
      if (!identity) {
        emit({ role: "assistant", content: block.text });
        continue;
      }
      emit({
        type: "message",
        role: "assistant",
        id: identity.id,
        status: "completed",
        content: [{ type: "output_text", text: block.text, annotations: [] }],
        ...(identity.phase ? { phase: identity.phase } : {}),
      });
    } else {
      const item: ResponsesFunctionCallItem = {
        type: "function_call",
        call_id: block.id,
        name: block.name,
        arguments: JSON.stringify(block.arguments),
      };
      const itemId = message.sameModel ? itemIdPart(block.sourceId) : undefined;
      if (itemId) item.id = itemId;
      emit(item);
    }
  }
  return items;
}

function outputItem(result: NormalToolResult): ResponsesInputItem {
  const { text, images } = resultParts(result.content);
  if (images.length === 0) return { type: "function_call_output", call_id: result.toolCallId, output: text };
  const output: ResponsesInputContent[] = text ? [{ type: "input_text", text }] : [];
  for (const image of images) output.push(content(image));
  return { type: "function_call_output", call_id: result.toolCallId, output };
}

/** `instructions` and `input` of a Responses request for `context`, sent to `model`. */
export function toOpenAIResponses(context: SessionContext, model: TargetModel): OpenAIResponsesRequest {
  const normal = normalizeContext(context, "openai-responses", model, { ids: OPENAI_RESPONSES_IDS });
  const input: ResponsesInputItem[] = [];
  for (const message of normal.messages) {
    if (message.role === "user") input.push({ role: "user", content: message.content.map(content) });
    else if (message.role === "developer") input.push({ role: "developer", content: message.text });
    else if (message.role === "assistant") for (const item of assistantItems(message)) input.push(item);
    else for (const result of message.results) input.push(outputItem(result));
  }
  return normal.system ? { instructions: normal.system, input } : { input };
}
