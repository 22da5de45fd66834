import type { CustomMessageEntry } from "./entries";
import type { AgentMessage } from "./messages";
import { fromAISDKUI } from "./providers/from-ai-sdk-ui";
import { fromOpenAIAgents } from "./providers/from-openai-agents";

/*
 * The framework adapters of cf-sessions 0.1 kept each OpenAI Agents SDK item and each AI SDK UI
 * message as a custom message holding it in `details`. Such sessions read as the messages those
 * records stand for (the same readers the adapters now write with), so every door sees their
 * conversation; the entries themselves stay as they were written.
 */

export const OPENAI_AGENTS_ITEM = "openai-agents:item";
export const AI_SDK_UI_MESSAGE = "ai-sdk:ui-message";

/** The messages a framework's custom message reads as, or undefined for any other custom message. */
export function frameworkMessages(entry: CustomMessageEntry): AgentMessage[] | undefined {
  const timestamp = Date.parse(entry.timestamp);
  try {
    if (entry.customType === OPENAI_AGENTS_ITEM) {
      return fromOpenAIAgents([entry.details], { timestamp }).flatMap((group) =>
        group.message ? [group.message] : [],
      );
    }
    if (entry.customType === AI_SDK_UI_MESSAGE) return fromAISDKUI(entry.details, { timestamp });
  } catch {
    // A record the reader refuses (written by hand, say) is shown as the custom message it is.
  }
  return undefined;
}
