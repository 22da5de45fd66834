import { SessionError } from "../../core/errors";
import type { Producer } from "./protocol";

/*
 * Idempotent producers (PROTOCOL.md 5.2.1): a writer names itself, its epoch (raised when it
 * restarts) and a sequence number per append. A retry of an append already written is answered as
 * a duplicate and writes nothing; an older epoch is fenced off; a gap in the sequence is refused,
 * saying which number was expected.
 */

export type ProducerVerdict = { kind: "accept" } | { kind: "duplicate"; lastSeq: number };

type ProducerState = { epoch: number; lastSeq: number };

/** Whether the append is one the producer already wrote (its retry). */
export function isDuplicate(state: ProducerState | undefined, producer: Producer): boolean {
  return state !== undefined && producer.epoch === state.epoch && producer.seq <= state.lastSeq;
}

export function checkProducer(state: ProducerState | undefined, producer: Producer): ProducerVerdict {
  if (!state) {
    if (producer.seq !== 0) throw gap(0, producer.seq);
    return { kind: "accept" };
  }
  if (producer.epoch < state.epoch) throw staleEpoch(state.epoch, producer.epoch);
  if (producer.epoch > state.epoch) {
    if (producer.seq !== 0) {
      throw new SessionError("invalid_request", "a new producer epoch starts at Producer-Seq 0", {
        epoch: producer.epoch,
        seq: producer.seq,
      });
    }
    return { kind: "accept" };
  }
  if (isDuplicate(state, producer)) return { kind: "duplicate", lastSeq: state.lastSeq };
  if (producer.seq === state.lastSeq + 1) return { kind: "accept" };
  throw gap(state.lastSeq + 1, producer.seq);
}

/** A producer writing with an epoch older than its current one: fenced off (a zombie writer). */
export function staleEpoch(currentEpoch: number, epoch: number): SessionError {
  const message = `this producer is at epoch ${currentEpoch}; epoch ${epoch} is fenced off`;
  return new SessionError("stale_epoch", message, { currentEpoch });
}

function gap(expectedSeq: number, receivedSeq: number): SessionError {
  return new SessionError(
    "sequence_conflict",
    `Producer-Seq ${expectedSeq} was expected, not ${receivedSeq}`,
    {
      expectedSeq,
      receivedSeq,
    },
  );
}

/**
 * Appends of one producer to one stream run one at a time, in the order they arrived: two of its
 * requests in flight at once (seq 1 sent right after seq 0) are checked in order, never as a gap.
 */
export class ProducerLanes {
  readonly #lanes = new Map<string, Promise<unknown>>();

  run<T>(lane: string, task: () => Promise<T>): Promise<T> {
    const result = (this.#lanes.get(lane) ?? Promise.resolve()).then(task);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.#lanes.set(lane, settled);
    void settled.then(() => {
      if (this.#lanes.get(lane) === settled) this.#lanes.delete(lane);
    });
    return result;
  }
}
