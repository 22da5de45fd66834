import { tryParseJson } from "../json";
import type { AgentMessage, AssistantMessage, ImageContent, TextContent } from "../messages";
import type { ReadOptions } from "./incoming";
import { historyReply, isRecord, WaitingCalls } from "./incoming";
import { messageSignature } from "./responses-signatures";
import { FORMAT_API } from "./target";
import { parseDataUrl } from "./text";

/*
 * OpenAI Agents SDK items in. They are the Responses API's items in the SDK's own spelling
 * (`callId`, `function_call_result`, `providerData`), and read as the Responses reader reads
 * those: a run of model output (reasoning, assistant messages, function calls) is one assistant
 * message, reasoning keeping the whole Responses item as its signature and message items their id
 * as theirs, calls keeping `call_id|item_id` as their id (pi-ai's conventions); a function result
 * is a tool result, a user or system message one of ours. Items the session model has no place
 * for (hosted and computer tools, shell calls, the SDK's compaction items) read as no message.
 */

type Item = Record<string, unknown>;

/** Items and the message they read as (none for items with no place in the session model). */
export interface AgentsItemGroup {
  items: unknown[];
  message?: AgentMessage;
}

/** Whether an item is model output that belongs to the assistant message of its run. */
function isOutput(item: Item): boolean {
  return item.type === "reasoning" || item.type === "function_call" || item.role === "assistant";
}

const texts = (parts: unknown): string[] =>
  Array.isArray(parts)
    ? parts.flatMap((part) => (isRecord(part) && typeof part.text === "string" ? [part.text] : []))
    : [];

/** An image the SDK gives as a data URL, bare base64, or `{data, mediaType}`; none for a URL or file id. */
function imageOf(image: unknown, mediaType?: unknown): ImageContent | undefined {
  if (isRecord(image)) {
    return typeof image.data === "string" ? imageOf(image.data, image.mediaType) : undefined;
  }
  if (typeof image !== "string" || image === "") return undefined;
  const url = parseDataUrl(image);
  if (url) return { type: "image", data: url.data, mimeType: url.mimeType };
  if (/^[a-z][a-z0-9+.-]*:/i.test(image)) return undefined;
  return { type: "image", data: image, mimeType: typeof mediaType === "string" ? mediaType : "image/png" };
}

/** Text and images of a user message or a tool's output; files, audio and linked images are left out. */
function inputContent(parts: unknown): Array<TextContent | ImageContent> {
  const out: Array<TextContent | ImageContent> = [];
  for (const part of [parts].flat()) {
    if (typeof part === "string") {
      if (part !== "") out.push({ type: "text", text: part });
    } else if (isRecord(part)) {
      if ((part.type === "input_text" || part.type === "text") && typeof part.text === "string") {
        out.push({ type: "text", text: part.text });
      } else if (part.type === "input_image" || part.type === "image") {
        const image = imageOf(part.image ?? part.data, part.mediaType);
        if (image) out.push(image);
      }
    }
  }
  return out;
}

function reasoningBlock(item: Item): AssistantMessage["content"][number] {
  const summary = texts(item.content);
  const thinking = (summary.length > 0 ? summary : texts(item.rawContent)).join("\n\n");
  const providerData = isRecord(item.providerData) ? item.providerData : {};
  const encrypted = providerData.encryptedContent ?? providerData.encrypted_content;
  if (typeof item.id !== "string" || item.id === "") return { type: "thinking", thinking };
  const responsesItem = {
    type: "reasoning",
    id: item.id,
    summary: summary.map((text) => ({ type: "summary_text", text })),
    encrypted_content: typeof encrypted === "string" ? encrypted : null,
  };
  return { type: "thinking", thinking, thinkingSignature: JSON.stringify(responsesItem) };
}

function textBlock(item: Item): AssistantMessage["content"][number] {
  const text = Array.isArray(item.content)
    ? item.content
        .map((part) =>
          isRecord(part) && typeof part.text === "string"
            ? part.text
            : isRecord(part) && typeof part.refusal === "string"
              ? part.refusal
              : "",
        )
        .join("")
    : "";
  if (typeof item.id !== "string" || item.id === "") return { type: "text", text };
  const phase = typeof item.phase === "string" ? item.phase : undefined;
  return { type: "text", text, textSignature: messageSignature(item.id, phase) };
}

function callBlock(item: Item): AssistantMessage["content"][number] {
  const callId = String(item.callId);
  const args = typeof item.arguments === "string" ? tryParseJson(item.arguments) : undefined;
  return {
    type: "toolCall",
    id: typeof item.id === "string" && item.id !== "" ? `${callId}|${item.id}` : callId,
    name: String(item.name),
    arguments: isRecord(args) ? args : {},
  };
}

function reply(run: readonly Item[], options: ReadOptions, timestamp: number): AssistantMessage {
  const content = run.map((item) =>
    item.type === "reasoning"
      ? reasoningBlock(item)
      : item.type === "function_call"
        ? callBlock(item)
        : textBlock(item),
  );
  return historyReply(content, FORMAT_API["openai-responses"], "openai", options, timestamp);
}

/** The message one item that is not model output reads as, if any. */
function single(item: Item, calls: WaitingCalls, timestamp: number): AgentMessage | undefined {
  if (item.type === "function_call_result") {
    const callId = String(item.callId);
    const call = calls.answer(callId);
    return {
      role: "toolResult",
      toolCallId: call?.id ?? callId,
      toolName: typeof item.name === "string" && item.name !== "" ? item.name : (call?.name ?? ""),
      content: inputContent(item.output),
      isError: false,
      timestamp,
    };
  }
  if (item.type !== undefined && item.type !== "message") return undefined;
  if (item.role === "user") {
    const content = typeof item.content === "string" ? item.content : inputContent(item.content);
    return { role: "user", content, timestamp };
  }
  if (item.role === "system" && typeof item.content === "string") {
    return { role: "system", content: item.content, timestamp };
  }
  return undefined;
}

/**
 * The messages OpenAI Agents SDK items read as, each with the items it came from, in order: one
 * group per run of model output, one per other item. Items are expected as the SDK checks them
 * (`protocol.ModelItem`); a field of another shape reads as absent.
 */
export function fromOpenAIAgents(items: readonly unknown[], options: ReadOptions = {}): AgentsItemGroup[] {
  const timestamp = options.timestamp ?? Date.now();
  const history: AgentMessage[] = [...(options.history ?? [])];
  const groups: AgentsItemGroup[] = [];
  let run: Item[] = [];
  const endRun = () => {
    if (run.length === 0) return;
    const message = reply(run, options, timestamp);
    groups.push({ items: run, message });
    history.push(message);
    run = [];
  };
  for (const raw of items) {
    const item = isRecord(raw) ? raw : {};
    if (isOutput(item)) {
      run.push(item);
      continue;
    }
    endRun();
    const message = single(item, new WaitingCalls(history), timestamp);
    groups.push(message ? { items: [raw], message } : { items: [raw] });
    if (message) history.push(message);
  }
  endRun();
  return groups;
}
