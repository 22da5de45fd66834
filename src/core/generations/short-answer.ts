import { utf8Length } from "../json";
import type { AgentMessage, AssistantMessage } from "../messages";
import { NO_USAGE } from "../messages";
import { assistantMessage } from "../providers/incoming";
import type { AnswerSource } from "./answer-fold";
import { answerBytes } from "./answer-size";
import { MAX_GENERATION_BYTES } from "./generation-schemas";

/*
 * An answer that could not be stored whole (too large for its entries, past the tenant's quota, its
 * entry's id taken), as the generation's ending keeps it: an ending always succeeds. It ends the
 * way a provider's answer cut short does, one assistant message with `stopReason: "length"`, its
 * `errorMessage` saying why; it keeps the start of the answer's text that fits (within what one
 * entry holds, and within the room the quota leaves), or nothing when the refusal leaves no room.
 */

/** What an ending keeps of an answer that could not be stored whole, and why. */
export interface Shortfall {
  /** The answer's text (`text`), or none of it (`nothing`). */
  keeps: "text" | "nothing";
  /** With `text`: the most bytes the kept message may take stored (its JSON), when room is short. */
  maxBytes?: number;
  /** The code of the refusal that made it short. */
  code: string;
  message: string;
}

/** The longest start of `text` whose stored form (its escapes included) takes at most `bytes`. */
function cut(text: string, bytes: number): string {
  if (answerBytes("text", text) <= bytes) return text;
  let used = 0;
  let end = 0;
  for (const char of text) {
    used += answerBytes("text", char);
    if (used > bytes) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/** The text of the answer's assistant messages, in order. */
function textOf(messages: readonly AgentMessage[]): string {
  let text = "";
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const block of (message as AssistantMessage).content) if (block.type === "text") text += block.text;
  }
  return text;
}

/** The message an ending keeps of `messages` after `shortfall`, holding `text` and saying `note`. */
function keptMessage(
  messages: readonly AgentMessage[],
  shortfall: Shortfall,
  source: AnswerSource,
  timestamp: number,
  text: string,
  note: string,
): AssistantMessage {
  const first = messages.find((message): message is AssistantMessage => message.role === "assistant");
  return assistantMessage({
    provider: first?.provider ?? source.provider,
    model: first?.model ?? source.model,
    api: first?.api ?? source.api,
    content: text === "" ? [] : [{ type: "text", text }],
    usage: first?.usage ?? NO_USAGE,
    stopReason: "length",
    errorMessage: `the answer could not be stored whole (${shortfall.code}: ${shortfall.message}); ${note}`,
    timestamp,
  });
}

/**
 * What the message an ending keeps of `messages` takes stored besides its text, at the most: an
 * empty text block, and a note counting as many characters kept as there are.
 */
function aroundText(
  messages: readonly AgentMessage[],
  shortfall: Shortfall,
  source: AnswerSource,
  timestamp: number,
): number {
  const { length } = textOf(messages);
  const note = `${length} of ${length} characters of its text are kept`;
  const message = keptMessage(messages, shortfall, source, timestamp, " ", note);
  return utf8Length(JSON.stringify(message)) - answerBytes("text", " ");
}

/** The answer `messages` as an ending keeps it after `shortfall`: one assistant message, cut short. */
export function shortAnswer(
  messages: readonly AgentMessage[],
  shortfall: Shortfall,
  source: AnswerSource,
  timestamp: number,
): AssistantMessage {
  const whole = textOf(messages);
  const noted = (text: string) =>
    keptMessage(
      messages,
      shortfall,
      source,
      timestamp,
      text,
      text.length === whole.length
        ? "its text is kept"
        : `${text.length} of ${whole.length} characters of its text are kept`,
    );
  if (shortfall.keeps === "nothing") return noted("");
  let text = cut(whole, MAX_GENERATION_BYTES);
  if (shortfall.maxBytes !== undefined) {
    text = cut(text, shortfall.maxBytes - aroundText(messages, shortfall, source, timestamp));
  }
  return noted(text);
}

/**
 * The `maxBytes` with which the ending after `shortfall` keeps all the text of `messages` it can
 * (as much as one generation holds): the most its message takes stored.
 */
export function shortAnswerBytes(
  messages: readonly AgentMessage[],
  shortfall: Shortfall,
  source: AnswerSource,
  timestamp: number,
): number {
  const text = shortfall.keeps === "nothing" ? "" : cut(textOf(messages), MAX_GENERATION_BYTES);
  return aroundText(messages, shortfall, source, timestamp) + answerBytes("text", text);
}
