import type {
  Checkpoint,
  CheckpointMetadata,
  CheckpointTuple,
  SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { maxChannelVersion, TASKS } from "@langchain/langgraph-checkpoint";
import type { Thread } from "./entries";
import { checkpointEntryId } from "./entries";
import { MESSAGES_CHANNEL } from "./messages";
import { pendingWrites } from "./pending-writes";
import { deserialize } from "./serialized";
import type { StoredCheckpoint, ThreadReader } from "./thread-reader";

/** A channel's next version after `current`, as the saver numbers them. */
export type NextVersion = (current: number | undefined) => number;

/**
 * A stored checkpoint as LangGraph reads it: its channels' values (its own, and those it holds from
 * earlier checkpoints), its messages from the entries of its path, its metadata and pending writes.
 */
export class CheckpointTuples {
  readonly #serde: SerializerProtocol;
  readonly #nextVersion: NextVersion;

  constructor(serde: SerializerProtocol, nextVersion: NextVersion) {
    this.#serde = serde;
    this.#nextVersion = nextVersion;
  }

  async of(
    thread: Thread,
    reader: ThreadReader,
    stored: StoredCheckpoint,
    metadata?: CheckpointMetadata,
  ): Promise<CheckpointTuple> {
    const { data } = stored;
    const channelValues: Record<string, unknown> = {};
    for (const [channel, value] of Object.entries(data.values)) {
      channelValues[channel] = await deserialize(this.#serde, value);
    }
    const byHolder = new Map<string, string[]>();
    for (const [channel, holder] of Object.entries(data.held)) {
      byHolder.set(holder, [...(byHolder.get(holder) ?? []), channel]);
    }
    // The messages channel as references: the checkpoint changed it, or holds it as one that did.
    let referenced = data.messages !== undefined;
    await Promise.all(
      [...byHolder].map(async ([holder, channels]) => {
        const held = await reader.checkpoint(holder);
        for (const channel of channels) {
          if (channel === MESSAGES_CHANNEL && held?.data.messages) referenced = true;
          const value = held?.data.values[channel];
          if (value !== undefined) channelValues[channel] = await deserialize(this.#serde, value);
        }
      }),
    );
    if (referenced) {
      const messages = await reader.messages(stored);
      if (messages)
        channelValues[MESSAGES_CHANNEL] = await Promise.all(messages.map((m) => deserialize(this.#serde, m)));
    }
    const checkpoint = { ...data.checkpoint, channel_values: channelValues } as Checkpoint;
    if (checkpoint.v < 4 && data.parent !== undefined)
      await this.#migratePendingSends(reader, checkpoint, data.parent);

    const ids = { thread_id: thread.threadId, checkpoint_ns: thread.checkpointNs };
    const tuple: CheckpointTuple = {
      config: { configurable: { ...ids, checkpoint_id: data.checkpoint.id } },
      checkpoint,
      metadata: metadata ?? ((await deserialize(this.#serde, data.metadata)) as CheckpointMetadata),
      pendingWrites: await pendingWrites(this.#serde, await reader.writes(stored)),
    };
    if (data.parent !== undefined)
      tuple.parentConfig = { configurable: { ...ids, checkpoint_id: data.parent } };
    return tuple;
  }

  /**
   * Checkpoints of format 3 and before kept the `Send`s of a step as their parent's writes to the
   * tasks channel; LangGraph now reads them from the checkpoint's own values (as its savers do).
   */
  async #migratePendingSends(reader: ThreadReader, checkpoint: Checkpoint, parentId: string): Promise<void> {
    const parent = await reader.checkpoint(await checkpointEntryId(parentId));
    if (!parent) return;
    const writes = await pendingWrites(this.#serde, await reader.writes(parent));
    checkpoint.channel_values[TASKS] = writes
      .filter(([, channel]) => channel === TASKS)
      .map(([, , value]) => value);
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] =
      versions.length > 0 ? maxChannelVersion(...versions) : this.#nextVersion(undefined);
  }
}
