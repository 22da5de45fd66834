import { zodDetails } from "../core/append";
import type { StoredEntry } from "../core/entries";
import { Id } from "../core/entries";
import { SessionError } from "../core/errors";
import { chunkText } from "../core/generations/chunks";
import type {
  GenerationFormat,
  GenerationInfo,
  OpenGenerationBody,
} from "../core/generations/generation-schemas";
import { newId } from "../core/ids";
import { retryDelay, sleep } from "./backoff";
import { endsFollowing, serviceJson, type Transport } from "./transport";

/*
 * Generations from the client: a writer that appends an answer's chunks as it is generated (each
 * append with producer headers, so a retry after a lost answer is written once), then completes
 * or stops it; and a reader that follows a generation from any offset, reconnecting after a drop
 * from the last offset it gave, so the caller gets every chunk once, in order.
 */

export type GenerateOptions = OpenGenerationBody;

/** A generation as it ended, and the entries its answer became. */
export interface GenerationResult {
  generation: GenerationInfo;
  entries: StoredEntry[];
}

/** Chunks read from a generation's stream, and the offset after them (resume from it). */
export interface GenerationChunk {
  offset: string;
  /** The text the chunks add: themselves (text), or their text deltas (pi-ai, ai-sdk-ui). */
  text: string;
  /** The events (pi-ai, ai-sdk-ui); none for a text generation. */
  events: unknown[];
}

export interface FollowOptions {
  /** Where to start: `-1` (the start, default), `now`, or an offset a chunk gave. */
  offset?: string;
  signal?: AbortSignal;
  /** First wait before reconnecting, doubled on each failure in a row (default 500 ms, at most 30 s). */
  retryDelayMs?: number;
  /** Failures in a row after which following gives up with the last one (default: never). */
  maxFailures?: number;
}

/** A path the service gave (`/v1/…`) as one the transport resolves against its base URL. */
function relative(path: string): string {
  return path.replace(/^\/+/, "");
}

/**
 * The path of a generation's routes. An id that is no id is refused before any request, as the
 * service refuses it (`.` and `..` would name another route once the URL is resolved).
 */
export function generationPath(sessionPath: string, id: string, rest = ""): string {
  const checked = Id.safeParse(id);
  if (!checked.success)
    throw new SessionError("invalid_request", "invalid path", zodDetails(checked.error, ["gid"]));
  return `${sessionPath}/generations/${encodeURIComponent(id)}${rest}`;
}

/**
 * Writes one generation: `append` its chunks as they come (text for a text generation, events
 * for pi-ai and ai-sdk-ui), then `complete` (or `stop`). Appends go one at a time, in order, each
 * with the writer's producer id and the next sequence number, retried after a network failure:
 * the service writes a retried append once. Once the generation is stopped (by anyone), appends
 * are refused with `stream_closed` and `signal` aborts: pass it to the model call.
 */
export class GenerationWriter {
  readonly info: GenerationInfo;
  readonly #http: Transport;
  readonly #sessionPath: string;
  readonly #producer = newId();
  readonly #stopped = new AbortController();
  #seq = 0;
  #queue: Promise<void> = Promise.resolve();
  #failure: unknown;
  #offset: string;

  constructor(http: Transport, sessionPath: string, info: GenerationInfo) {
    this.#http = http;
    this.#sessionPath = sessionPath;
    this.info = info;
    this.#offset = info.offset;
  }

  get id(): string {
    return this.info.id;
  }

  get format(): GenerationFormat {
    return this.info.format;
  }

  /** The stream's tail after the last append acknowledged. */
  get offset(): string {
    return this.#offset;
  }

  /** Aborts once the generation is stopped (an append was refused for it, or `stop` was called). */
  get signal(): AbortSignal {
    return this.#stopped.signal;
  }

  /**
   * Appends chunks: text (a text generation), or one event or a list of them (pi-ai, ai-sdk-ui).
   * Resolves once written; appends made without waiting are sent in the order they were made.
   * An empty chunk (`""`, `[]`: a streaming API's delta that carries no text) writes nothing and
   * resolves at once.
   */
  append(chunk: string | object | readonly unknown[]): Promise<void> {
    const body = this.#body(chunk);
    // The stream refuses an empty append, and a refused one would fail every append after it.
    if (chunk === "" || (Array.isArray(chunk) && chunk.length === 0)) return Promise.resolve();
    const seq = this.#seq++;
    const sent = this.#queue.then(() => this.#send(body, seq));
    // The next append waits for this one, and fails as it did.
    this.#queue = sent.catch((error: unknown) => {
      this.#failure ??= error;
    });
    return sent;
  }

  #body(chunk: string | object | readonly unknown[]): { body: string; contentType: string } {
    if (this.format === "text") {
      if (typeof chunk !== "string") {
        throw new SessionError("invalid_request", "a text generation takes text chunks");
      }
      return { body: chunk, contentType: "text/plain; charset=utf-8" };
    }
    return { body: JSON.stringify(chunk), contentType: "application/json" };
  }

  async #send(body: { body: string; contentType: string }, seq: number): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure;
    try {
      const response = await this.#http.send("POST", relative(this.info.stream), {
        raw: body,
        headers: { "Producer-Id": this.#producer, "Producer-Epoch": "0", "Producer-Seq": String(seq) },
        idempotent: true,
      });
      await response.body?.cancel();
      this.#offset = response.headers.get("Stream-Next-Offset") ?? this.#offset;
    } catch (error) {
      if (error instanceof SessionError && error.code === "stream_closed") this.#stopped.abort(error);
      throw error;
    }
  }

  /**
   * Completes the generation once every append made is written: the answer (`message`, or what
   * the chunks make) becomes the session's entry under the generation's parent.
   */
  async complete(message?: unknown): Promise<GenerationResult> {
    await this.#queue;
    if (this.#failure !== undefined) throw this.#failure;
    return this.#http.json("POST", generationPath(this.#sessionPath, this.id, "/complete"), {
      body: message === undefined ? {} : { message },
      idempotent: true,
    });
  }

  /** Stops the generation now: what was written becomes the entry, aborted; appends still queued fail. */
  async stop(): Promise<GenerationResult> {
    const result = await stopGeneration(this.#http, this.#sessionPath, this.id);
    this.#stopped.abort(new SessionError("stream_closed", `generation ${this.id} was stopped`));
    return result;
  }
}

export async function stopGeneration(
  http: Transport,
  sessionPath: string,
  id: string,
): Promise<GenerationResult> {
  return http.json("POST", generationPath(sessionPath, id, "/stop"), { body: {}, idempotent: true });
}

/** The chunks of one answer of the stream: its text, or its events. */
function chunkOf(format: GenerationFormat, data: string, offset: string): GenerationChunk {
  if (format === "text") return { offset, text: data, events: [] };
  const events = serviceJson(data, "the service sent chunks that are not JSON") as unknown[];
  return { offset, text: chunkText(format, events), events };
}

/**
 * A generation's chunks from `offset` on, live, until its stream is closed (completed or stopped).
 * Long-polls, each answering at once with what is there or as soon as a chunk comes: the bytes as
 * written (Server-Sent Events would turn a text's line ends into newlines). After a failure it
 * asks again from the last offset it gave, so every chunk comes once, in order.
 */
export async function* followGeneration(
  http: Transport,
  generation: Pick<GenerationInfo, "format" | "stream">,
  options: FollowOptions = {},
): AsyncGenerator<GenerationChunk> {
  const { signal } = options;
  const baseDelay = options.retryDelayMs ?? 500;
  // A character whose bytes two appends split is given whole, with the chunk that ends it; a
  // U+FEFF the answer starts with is the answer's.
  const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  let offset = options.offset ?? "-1";
  let cursor: string | undefined;
  let failures = 0;
  while (!signal?.aborted) {
    let response: Response | undefined;
    let bytes: Uint8Array;
    try {
      response = await http.send("GET", relative(generation.stream), {
        query: { offset, live: "long-poll", cursor },
        signal,
      });
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      if (signal?.aborted) return;
      // An answer whose body broke off is a lost connection, asked again like one.
      if (response === undefined && endsFollowing(error)) throw error;
      failures++;
      if (failures >= (options.maxFailures ?? Number.POSITIVE_INFINITY)) throw error;
      await sleep(retryDelay(baseDelay, failures), signal);
      continue;
    }
    failures = 0;
    const next = response.headers.get("Stream-Next-Offset") ?? offset;
    cursor = response.headers.get("Stream-Cursor") ?? cursor;
    const closed = response.headers.get("Stream-Closed") === "true";
    if (response.status === 200 && bytes.byteLength > 0) {
      const data = decoder.decode(bytes, { stream: !closed });
      const chunk = chunkOf(generation.format, data, next);
      if (chunk.text !== "" || chunk.events.length > 0) yield chunk;
    }
    offset = next;
    if (closed) return;
  }
}
