import type { UIMessageChunk } from "ai";
import { SessionError } from "../../core";
import { utf8Length } from "../../core/json";
import { MAX_APPEND_BYTES } from "../../core/limits";

/*
 * An AI SDK answer written to a generation as it streams: the parts of
 * `streamText(…).toUIMessageStream()` appended to an `ai-sdk-ui` generation a few at a time (what
 * came while the last append was on its way goes as one, or as many as one append's 1 MiB needs),
 * then the generation completed (or stopped, when the stream was aborted, or the pipe failed).
 * Readers anywhere follow the answer meanwhile; the session keeps it as an entry once it is done.
 */

/**
 * What the pipe writes to: a generation's writer, as `RemoteSession.generate({ format:
 * "ai-sdk-ui" })` answers it. `signal` aborts when the generation is stopped: give it to
 * `streamText` as its `abortSignal`, so a stop cancels the model call.
 */
export interface UIMessageGenerationWriter<Result> {
  readonly id: string;
  readonly signal: AbortSignal;
  append(chunks: readonly unknown[]): Promise<void>;
  complete(message?: unknown): Promise<Result>;
  stop(): Promise<Result>;
}

function isStopped(error: unknown): boolean {
  return error instanceof SessionError && error.code === "stream_closed";
}

/** A part waiting to be appended, and its bytes as JSON. */
interface Pending {
  chunk: UIMessageChunk;
  bytes: number;
}

/**
 * Appends a UI message stream's parts to the generation, then completes it (an `abort` part
 * stops it instead). A new answer's message id is the generation's, which is also its entry's id:
 * the UI and the session name the answer alike. An answer that goes on with the chat's last
 * message (after a tool's output or an approval the UI added) keeps that message's id, which
 * `toUIMessageStream({ originalMessages })` names in its `start` part: the UI goes on with the
 * message it holds, and the chat store reads the answer's entries as part of it. Resolves to what complete (or stop) answers; if
 * the generation is stopped meanwhile, reading stops and it resolves to the stop's outcome. Should
 * the stream or an append fail (a part more than one append takes is `payload_too_large`), the
 * generation is stopped, keeping what was written, and the pipe rejects with that failure.
 */
export async function pipeToGeneration<Result>(
  stream: ReadableStream<UIMessageChunk> | AsyncIterable<UIMessageChunk>,
  writer: UIMessageGenerationWriter<Result>,
): Promise<Result> {
  let pending: Pending[] = [];
  let sending: Promise<void> | undefined;
  let failure: unknown;
  let aborted = false;
  const flush = (): void => {
    if (sending || pending.length === 0 || failure !== undefined) return;
    // As many parts as one append's JSON array takes: its brackets, and a comma between two.
    let bytes = 1;
    let count = 0;
    for (const { bytes: part } of pending) {
      if (count > 0 && bytes + part + 1 > MAX_APPEND_BYTES) break;
      bytes += part + 1;
      count++;
    }
    const batch = pending.slice(0, count).map((part) => part.chunk);
    pending = pending.slice(count);
    sending = writer
      .append(batch)
      .catch((error: unknown) => {
        failure = error;
      })
      .finally(() => {
        sending = undefined;
        flush();
      });
  };
  try {
    for await (const chunk of stream as AsyncIterable<UIMessageChunk>) {
      if (failure !== undefined) break;
      if (chunk.type === "abort") aborted = true;
      const part = chunk.type === "start" ? { ...chunk, messageId: chunk.messageId ?? writer.id } : chunk;
      const bytes = utf8Length(JSON.stringify(part));
      if (bytes + 2 > MAX_APPEND_BYTES) {
        failure = new SessionError(
          "payload_too_large",
          `a UI message stream part of ${bytes} bytes as JSON is more than one append takes (${MAX_APPEND_BYTES})`,
          { type: chunk.type, bytes, limit: MAX_APPEND_BYTES },
        );
        break;
      }
      pending.push({ chunk: part, bytes });
      flush();
    }
  } catch (error) {
    // The stream failed: what it wrote is kept, as a stopped answer.
    await writer.stop().catch(() => undefined);
    throw error;
  }
  while (sending) await sending;
  if (failure !== undefined) {
    if (isStopped(failure)) return writer.stop();
    // What was written is kept, as a stopped answer: the writer's signal aborts the model call.
    await writer.stop().catch(() => undefined);
    throw failure;
  }
  return aborted ? writer.stop() : writer.complete();
}
