import type { SessionContext } from "../../core/context";
import type { AgentMessage } from "../../core/messages";
import type { SystemMessage } from "../../core/system-messages";
import { systemSections } from "../../core/system-messages";
import { estimateTokens } from "../../core/tokens";
import { count, h, isObject, shortTime, truncate } from "./dom";

/*
 * The context `buildContext` returns for an entry, drawn message by message: text, thinking
 * (collapsed), tool calls with their results beside them, images inline, and the summaries that
 * compaction and branch summaries put in front of the model. Messages come as agents wrote them,
 * so every field is read as what it may be, not as what it should be.
 */

// Long paths render from the newest end, a page at a time: 10,000 articles would stall the tab.
const CONTEXT_PAGE = 200;
// A message of an unknown role is shown as its JSON, cut to this many characters.
const UNKNOWN_MESSAGE_CHARS = 20_000;

const IMAGE_TYPE = /^image\/[a-z0-9.+-]+$/i;

type Part = Record<string, unknown>;

/** Tool results by the id of the call they answer. */
type Results = ReadonlyMap<string, AgentMessage>;

function imageElement(part: Part): HTMLElement {
  const mimeType = String(part.mimeType);
  if (typeof part.data !== "string" || !IMAGE_TYPE.test(mimeType))
    return h("p", { class: "muted", text: `[image of unsupported type ${mimeType}]` });
  return h("img", {
    src: `data:${mimeType};base64,${part.data}`,
    alt: `image (${mimeType})`,
    loading: "lazy",
  });
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

function partElement(part: unknown): HTMLElement {
  if (!isObject(part)) return h("pre", { text: jsonText(part) });
  if (part.type === "text") return h("div", { class: "text-part", text: String(part.text ?? "") });
  if (part.type === "image") return imageElement(part);
  if (part.type === "thinking") return thinkingElement(part);
  return h("pre", { text: jsonText(part) });
}

/** Text and image parts, as user messages, tool results and custom messages carry them. */
function contentElements(content: unknown): HTMLElement[] {
  if (typeof content === "string") return [h("div", { class: "text-part", text: content })];
  if (!Array.isArray(content)) return content === undefined ? [] : [h("pre", { text: jsonText(content) })];
  return content.map(partElement);
}

function thinkingElement(part: Part): HTMLElement {
  const text = String(part.thinking ?? "");
  const title = part.redacted ? "Thinking (redacted)" : `Thinking · ${count(text.length, "character")}`;
  return h("details", { class: "thinking" }, [h("summary", { text: title }), h("pre", { text })]);
}

function toolCallElement(part: Part, result: AgentMessage | undefined): HTMLElement {
  const id = String(part.id ?? "");
  return h("div", { class: "tool-call", "data-tool-call": id }, [
    h("div", {}, [
      h("span", { text: "tool call " }),
      h("span", { class: "tool-name", text: String(part.name) }),
      h("span", { class: "muted", text: ` · ${id}` }),
    ]),
    h("details", { open: true }, [
      h("summary", { text: "arguments" }),
      h("pre", { text: jsonText(part.arguments ?? {}) }),
    ]),
    result
      ? h("details", { class: `tool-result${result.isError ? " error" : ""}`, open: true }, [
          h("summary", {
            text: `${result.isError ? "error result" : "result"} · ≈ ${count(estimateTokens(result), "token")}`,
          }),
          ...contentElements(result.content),
        ])
      : h("p", { class: "muted", text: "no result in this context" }),
  ]);
}

function messageTitle(message: AgentMessage): string {
  switch (message.role) {
    case "toolResult":
      return `tool result · ${String(message.toolName ?? "")}`;
    case "compactionSummary":
      return "compaction summary";
    case "branchSummary":
      return "branch summary";
    case "custom":
      return `custom · ${String(message.customType ?? "")}`;
    default:
      return String(message.role);
  }
}

function messageBody(message: AgentMessage, results: Results): HTMLElement[] {
  switch (message.role) {
    case "user":
    case "toolResult":
    case "custom":
      return contentElements(message.content);
    case "assistant": {
      const parts: unknown[] = Array.isArray(message.content) ? message.content : [];
      const body = parts.map((part) =>
        isObject(part) && part.type === "toolCall"
          ? toolCallElement(part, results.get(String(part.id)))
          : partElement(part),
      );
      if (message.errorMessage)
        body.push(h("p", { class: "tool-result error", text: `error: ${String(message.errorMessage)}` }));
      return body;
    }
    case "compactionSummary":
    case "branchSummary": {
      const note =
        message.role === "compactionSummary"
          ? `replaces ≈ ${count(Number(message.tokensBefore) || 0, "token")} of earlier context`
          : `what was tried on a branch left at ${String(message.fromId ?? "")}`;
      return [
        h("p", { class: "muted", text: note }),
        h("div", { class: "text-part", text: String(message.summary ?? "") }),
      ];
    }
    case "bashExecution":
      return [
        h("pre", { text: `$ ${String(message.command ?? "")}` }),
        h("pre", { text: String(message.output ?? "") }),
      ];
    case "system":
      return systemBody(message);
    default:
      return [h("pre", { text: truncate(jsonText(message), UNKNOWN_MESSAGE_CHARS) })];
  }
}

/** A system message: its instructions, then each prompt section it sets or removes. */
function systemBody(message: AgentMessage): HTMLElement[] {
  const body = contentElements(
    typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content,
  );
  for (const [name, text] of systemSections(message as SystemMessage)) {
    body.push(
      h("p", { class: "muted", text: text === null ? `section ${name} removed` : `section ${name}` }),
    );
    if (text !== null) body.push(h("pre", { text }));
  }
  return body;
}

function messageElement(message: AgentMessage, index: number, results: Results): HTMLElement {
  const meta: string[] = [];
  if (message.role === "assistant" && message.model)
    meta.push(`${String(message.provider ?? "")}/${String(message.model)}`);
  if (message.role === "assistant" && message.stopReason) meta.push(String(message.stopReason));
  const timestamp = message.timestamp;
  const header = h("header", {}, [
    h("span", { class: "role", text: messageTitle(message) }),
    meta.length > 0 ? h("span", { text: meta.join(" · ") }) : null,
    timestamp && (typeof timestamp === "number" || typeof timestamp === "string")
      ? h("time", { text: shortTime(timestamp) })
      : null,
    h("span", { class: "tokens", text: `≈ ${count(estimateTokens(message), "token")}` }),
  ]);
  const role = String(message.role);
  return h("article", { class: `message role-${role}`, "data-index": index, "data-role": role }, [
    header,
    ...messageBody(message, results),
  ]);
}

/** Tool results that answer a call of an assistant message in the same context. */
function answeredCalls(messages: readonly AgentMessage[]): Map<string, AgentMessage> {
  const callIds = new Set<string>();
  for (const message of messages) {
    if (message.role !== "assistant" || !Array.isArray(message.content)) continue;
    for (const part of message.content as unknown[])
      if (isObject(part) && part.type === "toolCall") callIds.add(String(part.id));
  }
  const results = new Map<string, AgentMessage>();
  for (const message of messages) {
    const callId = String(message.toolCallId);
    if (message.role === "toolResult" && callIds.has(callId)) results.set(callId, message);
  }
  return results;
}

/** Renders a SessionContext into container; the figures are also data-* attributes for tools. */
export function renderContext(container: HTMLElement, context: SessionContext, entryId: string): void {
  const messages = context.messages;
  let tokens = 0;
  for (const message of messages) tokens += estimateTokens(message);

  // A tool result is shown under the call it answers; only the others stand alone.
  const results = answeredCalls(messages);
  const standalone = messages.flatMap((message, index) =>
    message.role === "toolResult" && results.get(String(message.toolCallId)) === message ? [] : [index],
  );

  const model = context.model ? `${context.model.provider}/${context.model.modelId}` : "none";
  const tools = context.activeToolNames ? context.activeToolNames.join(", ") || "none" : "default";
  const summary = h("p", { class: "context-summary" }, [
    h("span", {}, [h("strong", { text: count(messages.length, "message") })]),
    h("span", {}, [
      h("strong", { class: "token-estimate", text: `≈ ${count(tokens, "token")}` }),
      " (estimate)",
    ]),
    h("span", { text: `model ${model}` }),
    h("span", { text: `thinking ${context.thinkingLevel}` }),
    h("span", { text: `tools ${tools}` }),
  ]);
  const system = context.systemPrompt
    ? h("details", { class: "system-prompt" }, [
        h("summary", {
          text: `system prompt · ≈ ${count(Math.ceil(context.systemPrompt.length / 4), "token")}`,
        }),
        h("pre", { text: context.systemPrompt }),
      ])
    : "";
  const list = h("div", { class: "messages" });
  container.replaceChildren(summary, system, list);
  container.dataset.contextFor = entryId;
  container.dataset.messageCount = String(messages.length);
  container.dataset.tokenEstimate = String(tokens);

  let shownFrom = standalone.length;
  const showEarlier = () => {
    const from = Math.max(0, shownFrom - CONTEXT_PAGE);
    const fragment = document.createDocumentFragment();
    for (let i = from; i < shownFrom; i++) {
      const index = standalone[i] as number;
      fragment.append(messageElement(messages[index] as AgentMessage, index, results));
    }
    list.querySelector(".earlier")?.remove();
    list.prepend(fragment);
    shownFrom = from;
    if (shownFrom > 0) {
      list.prepend(
        h("button", {
          type: "button",
          class: "earlier",
          text: `Show ${count(shownFrom, "earlier message")}`,
          onclick: showEarlier,
        }),
      );
    }
  };
  showEarlier();
  if (messages.length === 0)
    list.append(
      h("p", { class: "muted", text: "No messages: a model is sent only the system prompt from here." }),
    );
}
