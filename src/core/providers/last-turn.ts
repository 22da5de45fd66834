import type { AgentMessage } from "../messages";

/*
 * The last turn of a conversation, which the readers of provider messages read tool results
 * against: from its last user message, or from the run of replies after the last tool results
 * (a framework may store one turn as several replies, one call each), to the end.
 */

/** Finds where the last turn starts, reading the conversation backwards a piece at a time. */
export class LastTurnStart {
  #sawReply = false;

  /**
   * Where in `messages` the last turn starts, each piece given being the messages just before the
   * previous one; undefined when it starts before them (at the conversation's start, if none are).
   */
  find(messages: readonly AgentMessage[]): number | undefined {
    for (let i = messages.length - 1; i >= 0; i--) {
      const { role } = messages[i] as AgentMessage;
      if (role === "user") return i;
      if (role === "assistant") this.#sawReply = true;
      else if (role === "toolResult" && this.#sawReply) return i + 1;
    }
    return undefined;
  }
}

/** The messages of the conversation's last turn (all of them when it starts at the beginning). */
export function lastTurnOf(messages: readonly AgentMessage[]): readonly AgentMessage[] {
  return messages.slice(new LastTurnStart().find(messages) ?? 0);
}
