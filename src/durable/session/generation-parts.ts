import { SessionError } from "../../core/errors";
import { answerBytes } from "../../core/generations/answer-size";
import { sqlOf } from "../sql";
import { formatOffset } from "../stream/offsets";
import type { StreamSources } from "../stream/sources";
import type { StreamState } from "../stream/store";
import { StreamStore } from "../stream/store";
import { DurableStreams } from "../stream/streams";
import { storedChunks } from "./generation-answer";
import type { GenerationRow } from "./generation-rows";
import { GenerationRows } from "./generation-rows";

/*
 * Where a session's generations are kept during one life of the session: their rows
 * (generation-rows.ts) and their streams, each `generation/<id>` in the object's stream store.
 * A generation is found here by id, and here refuses what only an open generation takes.
 */

/** The key of a generation's stream in the object's stream store. */
export const generationStreamKey = (id: string) => `generation/${id}`;

/** A generation's stream is made and removed by the generation alone: nothing forks from it. */
const NO_SOURCES: StreamSources = {
  keyOf: () => {
    throw new SessionError("invalid_request", "a generation's stream cannot be forked");
  },
  forkPoint: async () => ({ ok: false, error: { code: "not_found", message: "no such stream" } }),
  read: async () => ({ ok: false, error: { code: "not_found", message: "no such stream" } }),
  release: async () => undefined,
};

/** What an unknown generation id gets. */
function unknown(id: string): SessionError {
  return new SessionError("not_found", `generation ${id} does not exist`, { generationId: id });
}

export class GenerationParts {
  readonly rows: GenerationRows;
  readonly streams: DurableStreams;
  /** The bytes each open generation's answer takes so far, as its chunks were appended (answer-size.ts). */
  readonly #answerBytes = new Map<string, number>();

  /** Opens the tables in `storage` (updating them if they exist). */
  constructor(storage: DurableObjectStorage) {
    const [rows, store] = storage.transactionSync(() => [
      new GenerationRows(storage.sql, sqlOf(storage.sql)),
      new StreamStore(storage.sql),
    ]);
    this.rows = rows;
    this.streams = new DurableStreams({
      storage,
      store,
      sources: () => NO_SOURCES,
      // Generation streams have no TTL: the generations' own alarm removes them.
      scheduleAlarm: () => undefined,
    });
  }

  /** The generation `id`; `not_found` when there is none. */
  row(id: string): GenerationRow {
    const row = this.rows.get(id);
    if (!row) throw unknown(id);
    return row;
  }

  stream(id: string): StreamState | undefined {
    return this.streams.store.get(generationStreamKey(id));
  }

  /** The bytes generation `row`'s answer takes so far: counted from its stream once, then kept. */
  answerBytes(row: GenerationRow): number {
    let bytes = this.#answerBytes.get(row.id);
    if (bytes === undefined) {
      const stream = this.stream(row.id);
      bytes = 0;
      if (stream)
        for (const chunk of storedChunks(this.streams.store, row.format, stream))
          bytes += answerBytes(row.format, chunk);
      this.#answerBytes.set(row.id, bytes);
    }
    return bytes;
  }

  /** Chunks taking `bytes` more of the answer are being appended (counted before they are). */
  growAnswer(id: string, bytes: number): void {
    this.#answerBytes.set(id, (this.#answerBytes.get(id) ?? 0) + bytes);
  }

  /** What was counted of the answer may not stand (an append refused): counted again when next asked. */
  recountAnswer(id: string): void {
    this.#answerBytes.delete(id);
  }

  /** Refuses what only an open generation takes (`what`: more chunks, a complete, a stop). */
  checkOpen(row: GenerationRow, what = "no more chunks"): void {
    if (row.state === "open") return;
    const stream = this.stream(row.id);
    const how =
      row.state === "stopped"
        ? `stopped (${row.stoppedBy === "abandoned" ? "abandoned" : "by a client"})`
        : "completed";
    throw new SessionError("stream_closed", `generation ${row.id} was ${how}: it takes ${what}`, {
      generationId: row.id,
      state: row.state,
      ...(row.stoppedBy ? { stoppedBy: row.stoppedBy } : {}),
      entryIds: row.entryIds,
      nextOffset: formatOffset(stream?.tail ?? { records: 0, bytes: 0 }),
    });
  }
}
