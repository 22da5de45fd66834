import { SessionError } from "../../core/errors";
import type { StreamAppend, StreamHeader } from "../../core/stream-backup";
import type { ExpiryOutcome } from "../types";
import { answer, errorAnswer, metadataHeaders } from "./answers";
import { appendToStream } from "./append";
import type { AppendHook } from "./append-hook";
import type { StreamHostOptions } from "./context";
import { StreamContext } from "./context";
import { createStream } from "./create";
import { appendsForFork, forkPoint, readForFork, releaseFork } from "./fork-source";
import { ProducerLanes } from "./producers";
import { readStream } from "./read";
import type { AppendData, ForkPoint, ForkPointRequest, RecordPage } from "./sources";
import type { StreamStore } from "./store";
import { exportAppends, exportHeader } from "./stream-export";

/*
 * The Durable Streams protocol, once, for any Durable Object that hosts streams in its SQLite: a
 * stream's own object (StreamObject), or an object that keeps streams beside its own data. The
 * host hands each protocol request for a stream to `handle` (Request in, Response out), its alarm
 * to `alarm`, and its forks' sources' calls to the `…Fork` methods. Readers waiting live (long-
 * polls, SSE) wait in this object's memory and are woken by the writes.
 */

export class DurableStreams {
  readonly #context: StreamContext;
  readonly #lanes = new ProducerLanes();

  constructor(options: StreamHostOptions) {
    this.#context = new StreamContext(options);
  }

  get store(): StreamStore {
    return this.#context.store;
  }

  /**
   * Answers one protocol request for the stream `key`; errors are the service's error envelope. A
   * create or an append runs the host's `hook`.
   */
  async handle(
    request: Request,
    key: string,
    requestId: string | null,
    hook?: AppendHook,
  ): Promise<Response> {
    try {
      switch (request.method) {
        case "PUT":
          return await createStream(this.#context, request, key, hook);
        case "POST":
          return await appendToStream(this.#context, this.#lanes, request, key, hook);
        case "GET":
          return await readStream(this.#context, request, key);
        case "HEAD": {
          const stream = await this.#context.visible(key);
          return answer(200, { ...metadataHeaders(stream), "Cache-Control": "no-store" });
        }
        case "DELETE":
          await this.#context.retire(await this.#context.visible(key));
          return answer(204, {});
        default:
          throw new SessionError("not_found", `no route for ${request.method} on a stream`);
      }
    } catch (error) {
      if (!(error instanceof SessionError)) throw error;
      const failed = errorAnswer(error, requestId);
      // An answer to HEAD has no body.
      return request.method === "HEAD" ? new Response(null, failed) : failed;
    }
  }

  /**
   * A write made by the host itself, inside its own transaction (append the last data and close
   * the stream with its own rows): call this after the transaction, so waiting readers see it.
   */
  written(key: string): void {
    const stream = this.#context.store.get(key);
    if (stream) this.#context.written(stream);
  }

  /**
   * The host's streams went all at once (see `StreamHostOptions.present`): every reader waiting on
   * one is woken, and finds it gone.
   */
  wakeAll(): void {
    this.#context.waiters.wakeAll();
  }

  /**
   * Retention: retires the stream when it was last active (written, or renewed) before `before`.
   * A stream deleted already but kept for its forks stays.
   */
  async expireIdle(key: string, before: number): Promise<ExpiryOutcome> {
    const stream = await this.#context.current(key);
    if (!stream) return "missing";
    if (stream.deleted || stream.renewedAt >= before) return "kept";
    await this.#context.retire(stream);
    return "expired";
  }

  /** Deletes the stream, if there is one, as a DELETE does. */
  async remove(key: string): Promise<void> {
    const stream = this.#context.store.get(key);
    if (stream) await this.#context.retire(stream);
  }

  /** The stream's header in its tenant's backup (`not_found`, `gone` as for a read). */
  exportHeader(key: string): Promise<StreamHeader> {
    return exportHeader(this.#context, key);
  }

  /** A page of the stream's appends for its tenant's backup, from record `from` on. */
  exportAppends(
    key: string,
    from: number,
    maxBytes: number,
  ): Promise<{ appends: StreamAppend[]; next: number | null }> {
    return exportAppends(this.#context, key, from, maxBytes);
  }

  /** The host's alarm: streams whose time is up are retired; sources of removed forks are told. */
  alarm(): Promise<void> {
    return this.#context.alarm();
  }

  forkPoint(key: string, request: ForkPointRequest): Promise<ForkPoint> {
    return forkPoint(this.#context, key, request);
  }

  readForFork(key: string, from: number, until: number, maxBytes: number): Promise<RecordPage | null> {
    return readForFork(this.#context, key, from, until, maxBytes);
  }

  appendsForFork(key: string, from: number, until: number, maxBytes: number): Promise<AppendData[]> {
    return appendsForFork(this.#context, key, from, until, maxBytes);
  }

  releaseFork(key: string, token: string | null): Promise<void> {
    return releaseFork(this.#context, key, token);
  }
}
