import type { ChatRequestOptions, ChatTransport, UIMessage, UIMessageChunk } from "ai";
import type { GenerationInfo } from "../../client";
import { isRecord } from "../../core/providers/incoming";

/*
 * A `ChatTransport` for `useChat` / `Chat` whose answers are generations of the chat's session:
 * sending asks the app's server to start one (it opens an `ai-sdk-ui` generation and pipes
 * `streamText` into it, see `pipeToGeneration`) and reads the answer from the generation's stream.
 * Reading survives what a plain HTTP answer does not: a dropped connection is resumed from the
 * offset the UI has (`resumeStream()` after a disconnect: no part missed or repeated), a reload or
 * another tab finds the session's answer in flight and reads it from its start, and the answer is
 * written by the server whether anyone reads it or not.
 */

/** One read of a generation's stream: its events, and the offset after them. */
export interface GenerationRead {
  offset: string;
  events: unknown[];
}

/** What the transport reads a chat's answers from: its session on the service (a `RemoteSession`). */
export interface GenerationReader {
  generation(id: string): Promise<GenerationInfo>;
  generations(options: { state: "open" }): Promise<GenerationInfo[]>;
  follow(
    generation: GenerationInfo,
    options: { offset?: string; signal?: AbortSignal; maxFailures?: number },
  ): AsyncIterable<GenerationRead>;
  stopGeneration?(id: string): Promise<unknown>;
}

/** What `sendMessages` gives the app's server to start an answer. */
export type StartRequest<M extends UIMessage> = {
  chatId: string;
  messages: M[];
  trigger: "submit-message" | "regenerate-message";
  messageId: string | undefined;
  abortSignal: AbortSignal | undefined;
} & ChatRequestOptions;

export interface CfSessionsChatTransportOptions<M extends UIMessage> {
  /** The session holding a chat (e.g. `(chatId) => client.open(chatId)`, or by the chat store's id). */
  session(chatId: string): GenerationReader | Promise<GenerationReader>;
  /**
   * Starts the answer on the app's server (which opens the generation and pipes the model's
   * stream into it), answering the generation's id.
   */
  start(request: StartRequest<M>): Promise<{ generationId: string }>;
  /** Failed reads in a row before a read is given up as a disconnect (default 3): `resumeStream()` goes on. */
  maxFailures?: number;
  /** Whether stopping the chat (`stop()`) stops the generation on the service too (default false). */
  stopOnAbort?: boolean;
}

/** Where a read that was cut off stands: resumable from `offset` by `reconnectToStream`. */
interface Cut {
  generationId: string;
  offset: string;
}

function isChunk(event: unknown): event is UIMessageChunk {
  return isRecord(event) && typeof event.type === "string";
}

export class CfSessionsChatTransport<M extends UIMessage = UIMessage> implements ChatTransport<M> {
  /**
   * A reconnect after a disconnect resumes where the UI stopped (its streaming state is kept); one
   * without (a reload, another tab) reads the answer from its start into a new message.
   */
  readonly resumeStreamIsReplay = false;
  readonly #options: CfSessionsChatTransportOptions<M>;
  /** Reads cut off by a disconnect, by chat: where each stands. */
  readonly #cut = new Map<string, Cut>();

  constructor(options: CfSessionsChatTransportOptions<M>) {
    this.#options = options;
  }

  async sendMessages(
    options: Parameters<ChatTransport<M>["sendMessages"]>[0],
  ): Promise<ReadableStream<UIMessageChunk>> {
    this.#cut.delete(options.chatId);
    const { generationId } = await this.#options.start(options);
    const reader = await this.#options.session(options.chatId);
    const generation = await reader.generation(generationId);
    // Sent after a tool's output or an approval the UI added, the answer goes on with the chat's
    // last message, as the AI SDK's own streams do: it keeps that message's id.
    const last = options.messages.at(-1);
    const continued =
      options.trigger === "submit-message" && last?.role === "assistant" ? last.id : undefined;
    return this.#read(options.chatId, reader, generation, "-1", options.abortSignal, continued);
  }

  /**
   * The chat's answer in flight: after a disconnect, the one that was being read, from where the
   * UI stands; otherwise the session's latest open `ai-sdk-ui` generation, from its start. None
   * (null) when nothing is being written.
   */
  async reconnectToStream(
    options: Parameters<ChatTransport<M>["reconnectToStream"]>[0],
  ): Promise<ReadableStream<UIMessageChunk> | null> {
    const reader = await this.#options.session(options.chatId);
    const cut = this.#cut.get(options.chatId);
    this.#cut.delete(options.chatId);
    if (cut) {
      const generation = await reader.generation(cut.generationId).catch(() => undefined);
      if (generation) return this.#read(options.chatId, reader, generation, cut.offset, options.abortSignal);
    }
    const open = (await reader.generations({ state: "open" })).filter(
      (generation) => generation.state === "open" && generation.format === "ai-sdk-ui",
    );
    const latest = open.at(-1);
    return latest ? this.#read(options.chatId, reader, latest, "-1", options.abortSignal) : null;
  }

  #read(
    chatId: string,
    reader: GenerationReader,
    generation: GenerationInfo,
    offset: string,
    abortSignal: AbortSignal | undefined,
    continued?: string,
  ): ReadableStream<UIMessageChunk> {
    const stop = new AbortController();
    const aborted = () => {
      stop.abort();
      if (this.#options.stopOnAbort) void reader.stopGeneration?.(generation.id).catch(() => undefined);
    };
    if (abortSignal?.aborted) aborted();
    else abortSignal?.addEventListener("abort", aborted, { once: true });
    const reads = reader
      .follow(generation, { offset, signal: stop.signal, maxFailures: this.#options.maxFailures ?? 3 })
      [Symbol.asyncIterator]();
    let at = offset;
    let finished = false;
    return new ReadableStream<UIMessageChunk>(
      {
        pull: async (controller) => {
          let next: IteratorResult<GenerationRead>;
          try {
            next = await reads.next();
          } catch (error) {
            if (stop.signal.aborted) return controller.close();
            // Resumable from here: what the UI read so far is exactly what came before `at`.
            this.#cut.set(chatId, { generationId: generation.id, offset: at });
            const reason = error instanceof Error ? error.message : String(error);
            return controller.error(
              new TypeError(`network error reading generation ${generation.id}: ${reason}`),
            );
          }
          if (next.done) {
            // Closed without its finish: the generation was stopped.
            if (!finished && !stop.signal.aborted) controller.enqueue({ type: "abort" });
            return controller.close();
          }
          for (const event of next.value.events) {
            if (!isChunk(event)) continue;
            if (event.type === "finish") finished = true;
            controller.enqueue(
              event.type === "start" && continued !== undefined ? { ...event, messageId: continued } : event,
            );
          }
          at = next.value.offset;
        },
        cancel: () => stop.abort(),
      },
      { highWaterMark: 0 },
    );
  }
}
