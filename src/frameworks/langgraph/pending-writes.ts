import type { CheckpointPendingWrite, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { compareWritesSortKeys, writesSortKey } from "@langchain/langgraph-checkpoint";
import type { WritesData } from "./entries";
import { deserialize } from "./serialized";

/** The pending writes as LangGraph replays them: one per task and index, in `writesSortKey` order. */
export async function pendingWrites(
  serde: SerializerProtocol,
  entries: readonly WritesData[],
): Promise<CheckpointPendingWrite[]> {
  const byKey = new Map<string, WritesData["writes"][number] & { taskPath: string; taskId: string }>();
  for (const entry of entries) {
    for (const write of entry.writes) {
      const key = `${entry.taskId}\n${write.idx}`;
      // A task's regular write is kept once (a retry adds nothing); errors, interrupts and
      // resumes (negative indexes) are replaced by the latest.
      if (write.idx >= 0 && byKey.has(key)) continue;
      byKey.set(key, { taskPath: entry.taskPath ?? "", taskId: entry.taskId, ...write });
    }
  }
  const ordered = [...byKey.values()].sort((a, b) =>
    compareWritesSortKeys(
      writesSortKey(a.taskPath, a.taskId, a.idx),
      writesSortKey(b.taskPath, b.taskId, b.idx),
    ),
  );
  return Promise.all(
    ordered.map(
      async (w): Promise<CheckpointPendingWrite> => [w.taskId, w.channel, await deserialize(serde, w.value)],
    ),
  );
}
