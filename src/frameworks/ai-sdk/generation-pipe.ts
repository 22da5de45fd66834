import type { UIMessageChunk } from "ai";
import { SessionError } from "../../core";

/*
 * An AI SDK answer written to a generation as it streams: the parts of
 * `streamText(…).toUIMessageStream()` appended to an `ai-sdk-ui` generation a few at a time (what
 * came while the last append was on its way goes as one), then the generation completed (or
 * stopped, when the stream was aborted). Readers anywhere follow the answer meanwhile; the
 * session keeps it as an entry once it is done.
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

/**
 * Appends a UI message stream's parts to the generation, then completes it (an `abort` part
 * stops it instead). The answer's message id is the generation's, which is also its entry's id:
 * the UI and the session name the answer alike. Resolves to what complete (or stop) answers; if
 * the generation is stopped meanwhile, reading stops and it resolves to the stop's outcome.
 */
export async function pipeToGeneration<Result>(
  stream: ReadableStream<UIMessageChunk> | AsyncIterable<UIMessageChunk>,
  writer: UIMessageGenerationWriter<Result>,
): Promise<Result> {
  let pending: UIMessageChunk[] = [];
  let sending: Promise<void> | undefined;
  let failure: unknown;
  let aborted = false;
  const flush = (): void => {
    if (sending || pending.length === 0 || failure !== undefined) return;
    const batch = pending;
    pending = [];
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
      pending.push(chunk.type === "start" ? { ...chunk, messageId: writer.id } : chunk);
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
    throw failure;
  }
  return aborted ? writer.stop() : writer.complete();
}
