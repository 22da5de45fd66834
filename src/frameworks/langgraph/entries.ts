import * as z from "zod";
import { keyedId } from "../keys";
import { Serialized } from "./serialized";

/*
 * What a thread's session holds: one `custom` entry per checkpoint, under the checkpoint it was
 * made from (and under the entries of the messages it added, messages.ts), and one `custom` entry
 * per `putWrites` call (one task's writes), under the checkpoint the writes are for.
 */

export const CHECKPOINT = "langgraph:checkpoint";
export const WRITES = "langgraph:writes";

const ChannelVersion = z.union([z.number(), z.string()]);

/** The fields of a checkpoint the saver reads and checks. */
const checkpointFields = {
  v: z.number(),
  id: z.string(),
  ts: z.string(),
  channel_versions: z.record(z.string(), ChannelVersion),
  versions_seen: z.record(z.string(), z.record(z.string(), ChannelVersion)),
};

/**
 * A checkpoint without its channel values: the values of the channels it changed are in `values`,
 * and each other channel names in `held` the entry of an earlier checkpoint that holds its value at
 * this checkpoint's version (so each version of a value is stored once, as in LangGraph's SQL savers).
 */
export const MessageRef = z.object({
  id: z.string(),
  entry: z.string(),
  holder: z.string(),
  print: z.string(),
  editable: z.boolean(),
});

export const CheckpointData = z.object({
  checkpoint: z.looseObject(checkpointFields),
  values: z.record(z.string(), Serialized),
  /**
   * How the checkpoint changed the messages channel, as references to entries (messages.ts): the
   * ids it no longer holds, and the messages it added or replaced. The channel's value is that of
   * the checkpoint it was made from, so changed.
   */
  messages: z.object({ removed: z.array(z.string()), added: z.array(MessageRef) }).optional(),
  held: z.record(z.string(), z.string()),
  metadata: Serialized,
  /** The checkpoint it was made from (also the entry's parent, unless that one is gone). */
  parent: z.string().optional(),
});
export type CheckpointData = z.infer<typeof CheckpointData>;

export const WritesData = z.object({
  checkpointId: z.string(),
  taskId: z.string(),
  taskPath: z.string().optional(),
  writes: z.array(z.object({ channel: z.string(), idx: z.number().int(), value: Serialized })),
});
export type WritesData = z.infer<typeof WritesData>;

/** What a session's metadata says of the thread it keeps. */
export const ThreadMetadata = z.object({ threadId: z.string(), checkpointNs: z.string() });
export type ThreadMetadata = z.infer<typeof ThreadMetadata>;

/** A thread in one checkpoint namespace, and the session that keeps it. */
export interface Thread extends ThreadMetadata {
  sessionId: string;
}

/** The entry id of a checkpoint (its id as it is when it fits the id syntax). */
export function checkpointEntryId(checkpointId: string): Promise<string> {
  return keyedId("", [checkpointId]);
}

/** The input the checkpoint argument of `put` must be (channel values and versions are checked). */
export const CheckpointInput = z.looseObject({
  ...checkpointFields,
  id: z.string().min(1),
  channel_values: z.record(z.string(), z.unknown()),
});

export const Configurable = z.looseObject({
  thread_id: z.string().min(1).optional(),
  checkpoint_ns: z.string().optional(),
  checkpoint_id: z.string().min(1).optional(),
});
