import { SessionError } from "../../core/errors";
import type { AgentMessage, AssistantMessage } from "../../core/messages";
import { WaitingCalls } from "../../core/providers/incoming";
import { LastTurnStart } from "../../core/providers/last-turn";
import type { SessionStorage } from "../../core/storage";

/*
 * Where a note may go: after a turn, never inside one. A note reaches the model as a user's
 * message, so at a head whose reply waits for the results of its tool calls it would close the
 * turn, and the results written after it would be dropped from the context as answering no call.
 * An answer being generated goes under the head it opened at, which would leave a note written
 * meanwhile on a branch of its own. Both are refused, `leaf_conflict`, until the turn is over: the
 * first here, the append then written only if the head is still the one checked; the second by
 * the session's object in the append's own write (`AppendGuard`), so that no generation opens
 * between the check and the note.
 */

/** Entries that end a turn as a user's message does: the model reads each as one. */
const TURN_ENDS = new Set(["custom_message", "compaction", "branch_summary"]);

/** The calls the head's turn waits for results of, read back from the head to where the turn starts. */
async function waitingCalls(storage: SessionStorage, leafId: string | null): Promise<string[]> {
  const turn = new LastTurnStart();
  const messages: AgentMessage[] = [];
  for (let id = leafId; id !== null; ) {
    const entry = await storage.getEntry(id);
    if (entry === undefined || TURN_ENDS.has(entry.type)) break;
    if (entry.type === "message") {
      const { stopReason } = entry.message as Partial<AssistantMessage>;
      // A reply that failed or was aborted is not replayed to the model: its calls wait for nothing.
      if (stopReason === "error" || stopReason === "aborted") break;
      messages.push(entry.message);
      if (turn.find([entry.message]) !== undefined) break;
    }
    id = entry.parentId;
  }
  return new WaitingCalls(messages.reverse()).waiting();
}

/** The session's head, where a note may be appended now; `leaf_conflict` while its reply waits for tool results. */
export async function noteHead(storage: SessionStorage): Promise<string | null> {
  const leafId = await storage.getLeafId();
  const waiting = await waitingCalls(storage, leafId);
  if (waiting.length > 0) {
    throw new SessionError(
      "leaf_conflict",
      `the head's reply waits for the results of its tool calls ${waiting.join(", ")}; a note now would drop them from the context: append it once they are written`,
      { leafId, waiting },
    );
  }
  return leafId;
}
