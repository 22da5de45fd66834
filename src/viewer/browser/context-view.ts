/*
 * The context `buildContext` returns for an entry, drawn message by message: text, thinking
 * (collapsed), tool calls with their results beside them, images inline, and the summaries that
 * compaction and branch summaries put in front of the model.
 */

export const contextViewScript = String.raw`
// Long paths render from the newest end, a page at a time: 10,000 articles would stall the tab.
const CONTEXT_PAGE = 200;

const IMAGE_TYPE = /^image\/[a-z0-9.+-]+$/i;

function imageElement(part) {
  if (typeof part.data !== "string" || !IMAGE_TYPE.test(String(part.mimeType))) {
    return h("p", { class: "muted", text: "[image of unsupported type " + String(part.mimeType) + "]" });
  }
  return h("img", { src: "data:" + part.mimeType + ";base64," + part.data, alt: "image (" + part.mimeType + ")", loading: "lazy" });
}

function jsonText(value) {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Text and image parts, as user messages, tool results and custom messages carry them. */
function contentElements(content) {
  if (typeof content === "string") return [h("div", { class: "text-part", text: content })];
  if (!Array.isArray(content)) return content === undefined ? [] : [h("pre", { text: jsonText(content) })];
  return content.map((part) => {
    if (!part || typeof part !== "object") return h("pre", { text: jsonText(part) });
    if (part.type === "text") return h("div", { class: "text-part", text: String(part.text ?? "") });
    if (part.type === "image") return imageElement(part);
    if (part.type === "thinking") return thinkingElement(part);
    return h("pre", { text: jsonText(part) });
  });
}

function thinkingElement(part) {
  const text = String(part.thinking ?? "");
  const title = part.redacted ? "Thinking (redacted)" : "Thinking · " + count(text.length, "character");
  return h("details", { class: "thinking" }, [h("summary", { text: title }), h("pre", { text })]);
}

function toolCallElement(part, result) {
  const children = [
    h("div", {}, [h("span", { text: "tool call " }), h("span", { class: "tool-name", text: String(part.name) }), h("span", { class: "muted", text: " · " + String(part.id ?? "") })]),
    h("details", { open: true }, [h("summary", { text: "arguments" }), h("pre", { text: jsonText(part.arguments ?? {}) })]),
  ];
  if (result) {
    const title = (result.isError ? "error result" : "result") + " · ≈ " + count(estimateTokens(result), "token");
    children.push(h("details", { class: "tool-result" + (result.isError ? " error" : ""), open: true }, [h("summary", { text: title })].concat(contentElements(result.content))));
  } else {
    children.push(h("p", { class: "muted", text: "no result in this context" }));
  }
  return h("div", { class: "tool-call", "data-tool-call": String(part.id ?? "") }, children);
}

function messageTitle(message) {
  switch (message.role) {
    case "toolResult":
      return "tool result · " + String(message.toolName ?? "");
    case "compactionSummary":
      return "compaction summary";
    case "branchSummary":
      return "branch summary";
    case "custom":
      return "custom · " + String(message.customType ?? "");
    default:
      return String(message.role);
  }
}

function messageBody(message, results) {
  switch (message.role) {
    case "user":
      return contentElements(message.content);
    case "assistant": {
      const parts = Array.isArray(message.content) ? message.content : [];
      const body = parts.map((part) => (part && part.type === "toolCall" ? toolCallElement(part, results.get(part.id)) : contentElements([part])[0]));
      if (message.errorMessage) body.push(h("p", { class: "tool-result error", text: "error: " + String(message.errorMessage) }));
      return body;
    }
    case "toolResult":
      return contentElements(message.content);
    case "compactionSummary":
      return [
        h("p", { class: "muted", text: "replaces ≈ " + count(Number(message.tokensBefore) || 0, "token") + " of earlier context" }),
        h("div", { class: "text-part", text: String(message.summary ?? "") }),
      ];
    case "branchSummary":
      return [
        h("p", { class: "muted", text: "what was tried on a branch left at " + String(message.fromId ?? "") }),
        h("div", { class: "text-part", text: String(message.summary ?? "") }),
      ];
    case "custom":
      return contentElements(message.content);
    case "bashExecution":
      return [h("pre", { text: "$ " + String(message.command ?? "") }), h("pre", { text: String(message.output ?? "") })];
    default:
      return [h("pre", { text: truncate(jsonText(message), 20000) })];
  }
}

function messageElement(message, index, results) {
  const meta = [];
  if (message.role === "assistant" && message.model) meta.push(String(message.provider ?? "") + "/" + String(message.model));
  if (message.role === "assistant" && message.stopReason) meta.push(String(message.stopReason));
  const header = h("header", {}, [
    h("span", { class: "role", text: messageTitle(message) }),
    meta.length > 0 ? h("span", { text: meta.join(" · ") }) : null,
    message.timestamp ? h("time", { text: shortTime(message.timestamp) }) : null,
    h("span", { class: "tokens", text: "≈ " + count(estimateTokens(message), "token") }),
  ]);
  return h("article", { class: "message role-" + String(message.role), "data-index": index, "data-role": String(message.role) }, [header].concat(messageBody(message, results)));
}

/** Renders a SessionContext into container; the figures are also data-* attributes for tools. */
function renderContext(container, context, entryId) {
  const messages = Array.isArray(context.messages) ? context.messages : [];
  let tokens = 0;
  for (const message of messages) tokens += estimateTokens(message);

  // A tool result is shown under the call it answers; only orphans stand alone.
  const callIds = new Set();
  for (const message of messages) {
    if (message.role !== "assistant" || !Array.isArray(message.content)) continue;
    for (const part of message.content) if (part && part.type === "toolCall") callIds.add(part.id);
  }
  const results = new Map();
  for (const message of messages) {
    if (message.role === "toolResult" && callIds.has(message.toolCallId)) results.set(message.toolCallId, message);
  }
  const standalone = [];
  messages.forEach((message, index) => {
    if (!(message.role === "toolResult" && results.get(message.toolCallId) === message)) standalone.push(index);
  });

  const model = context.model ? context.model.provider + "/" + context.model.modelId : "none";
  const summary = h("p", { class: "context-summary" }, [
    h("span", {}, [h("strong", { text: count(messages.length, "message") })]),
    h("span", {}, [h("strong", { class: "token-estimate", text: "≈ " + count(tokens, "token") }), " (estimate)"]),
    h("span", { text: "model " + model }),
    h("span", { text: "thinking " + String(context.thinkingLevel ?? "off") }),
    h("span", { text: "tools " + (Array.isArray(context.activeToolNames) ? context.activeToolNames.join(", ") || "none" : "default") }),
  ]);
  const system = context.systemPrompt
    ? h("details", { class: "system-prompt" }, [h("summary", { text: "system prompt · ≈ " + count(Math.ceil(context.systemPrompt.length / 4), "token") }), h("pre", { text: context.systemPrompt })])
    : null;
  const list = h("div", { class: "messages" });
  container.replaceChildren(summary, system || "", list);
  container.dataset.contextFor = entryId;
  container.dataset.messageCount = String(messages.length);
  container.dataset.tokenEstimate = String(tokens);

  let shownFrom = standalone.length;
  const showEarlier = () => {
    const from = Math.max(0, shownFrom - CONTEXT_PAGE);
    const fragment = document.createDocumentFragment();
    for (let i = from; i < shownFrom; i++) fragment.append(messageElement(messages[standalone[i]], standalone[i], results));
    const more = list.querySelector(".earlier");
    if (more) more.remove();
    list.prepend(fragment);
    shownFrom = from;
    if (shownFrom > 0) {
      list.prepend(h("button", { type: "button", class: "earlier", text: "Show " + count(shownFrom, "earlier message") , onclick: showEarlier }));
    }
  };
  showEarlier();
  if (messages.length === 0) list.append(h("p", { class: "muted", text: "No messages: a model is sent only the system prompt from here." }));
}

/** One line about an entry, for its tree row. */
function describeEntry(entry) {
  switch (entry.type) {
    case "message":
      return describeMessage(entry.message || {});
    case "model_change":
      return entry.provider + "/" + entry.modelId;
    case "thinking_level_change":
      return "thinking " + entry.thinkingLevel;
    case "active_tools_change":
      return "tools " + (entry.activeToolNames || []).join(", ");
    case "compaction":
    case "branch_summary":
      return String(entry.summary ?? "");
    case "custom_message":
      return entry.customType + ": " + firstText(entry.content);
    case "custom":
      return String(entry.customType ?? "");
    case "label":
      return entry.label ? entry.targetId + " ← “" + entry.label + "”" : "cleared the label of " + entry.targetId;
    case "session_info":
      return entry.name ? "renamed “" + entry.name + "”" : "name cleared";
    default:
      return "";
  }
}

function firstText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  for (const part of content) if (part && part.type === "text" && part.text) return part.text;
  return content.some((part) => part && part.type === "image") ? "[image]" : "";
}

function describeMessage(message) {
  if (message.role === "toolResult") return String(message.toolName ?? "") + ": " + firstText(message.content);
  if (message.role === "assistant" && Array.isArray(message.content)) {
    const text = firstText(message.content);
    if (text) return text;
    const calls = message.content.filter((part) => part && part.type === "toolCall").map((part) => part.name + "(…)");
    if (calls.length > 0) return calls.join(", ");
    return message.content.some((part) => part && part.type === "thinking") ? "[thinking]" : "";
  }
  if (message.role === "bashExecution") return "$ " + String(message.command ?? "");
  return firstText(message.content);
}
`;
