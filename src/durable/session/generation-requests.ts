import { SessionError } from "../../core/errors";
import { answerBytes } from "../../core/generations/answer-size";
import { checkChunk } from "../../core/generations/chunks";
import { MAX_GENERATION_BYTES } from "../../core/generations/generation-schemas";
import { tryParseJson } from "../../core/json";
import { errorAnswer } from "../stream/answers";
import type { AppendHook } from "../stream/append-hook";
import { readBody } from "../stream/body";
import { HEADER, MAX_APPEND_BYTES, mediaType } from "../stream/protocol";
import type { StreamState } from "../stream/store";
import type { GenerationParts } from "./generation-parts";
import { generationStreamKey } from "./generation-parts";
import type { GenerationRow } from "./generation-rows";

/*
 * Durable Streams requests for a generation's stream: reads (GET, HEAD) as for any stream;
 * appends (POST) while it is open, within MAX_GENERATION_BYTES (its chunks, and the answer they
 * make as it will be stored), each chunk checked for its format. It is closed by complete or stop only, and removed by the alarm (generations.ts).
 */

/** What the requests need of the generations. */
export interface GenerationRequestHost {
  /** Throws when the session is not there for its routes (deleted). */
  checkListed(): void;
  /** The generations' rows and streams in the session's current life. */
  parts(): GenerationParts;
  /**
   * Runs `append` (which the hook it is given runs in the append's transaction) as a write that
   * stores the chunks' bytes: counted in the session's, within its room.
   */
  stored(row: GenerationRow, append: (hook: AppendHook | undefined) => Promise<Response>): Promise<Response>;
}

/** Answers a request for the stream of generation `id`; a refusal is the protocol's error answer. */
export async function handleGenerationRequest(
  host: GenerationRequestHost,
  id: string,
  request: Request,
  requestId: string | null,
): Promise<Response> {
  try {
    host.checkListed();
    const row = host.parts().row(id);
    const { streams } = host.parts();
    if (request.method === "GET" || request.method === "HEAD") {
      return await streams.handle(request, generationStreamKey(id), requestId);
    }
    if (request.method !== "POST") {
      throw new SessionError(
        "invalid_request",
        "a generation's stream is made by POST …/generations and removed after its retention window",
        { method: request.method },
      );
    }
    return await append(host, row, request, requestId);
  } catch (error) {
    if (!(error instanceof SessionError)) throw error;
    const failed = errorAnswer(error, requestId);
    return request.method === "HEAD" ? new Response(null, failed) : failed;
  }
}

async function append(
  host: GenerationRequestHost,
  row: GenerationRow,
  request: Request,
  requestId: string | null,
): Promise<Response> {
  if (request.headers.get(HEADER.closed)?.toLowerCase() === "true") {
    throw new SessionError(
      "invalid_request",
      "a generation's stream is closed by POST …/complete or …/stop, which write its answer",
    );
  }
  const parts = host.parts();
  parts.checkOpen(row);
  const body = await readBody(request, MAX_APPEND_BYTES);
  // The body was read: what came meanwhile counts (a stop, another append).
  const current = parts.row(row.id);
  parts.checkOpen(current);
  const stream = parts.stream(row.id) as StreamState;
  if (stream.tail.bytes + body.byteLength > MAX_GENERATION_BYTES) {
    throw new SessionError(
      "payload_too_large",
      `a generation's stream holds at most ${MAX_GENERATION_BYTES} bytes; complete it, or open another`,
      { limit: MAX_GENERATION_BYTES, holds: stream.tail.bytes },
    );
  }
  // Chunks of the stream's own type are checked here; any other type is the protocol's to refuse.
  let adds = 0;
  if (mediaType(request.headers.get("Content-Type")) === mediaType(stream.contentType)) {
    for (const chunk of checkedChunks(current, body)) adds += answerBytes(current.format, chunk);
    const holds = parts.answerBytes(current);
    if (holds + adds > MAX_GENERATION_BYTES) {
      throw new SessionError(
        "payload_too_large",
        `a generation's answer takes at most ${MAX_GENERATION_BYTES} bytes stored (its text with its escapes); complete it, or open another`,
        { limit: MAX_GENERATION_BYTES, answerBytes: holds, adds },
      );
    }
  }
  // Counted before it is written, so that appends at the same time count each other.
  parts.growAnswer(row.id, adds);
  // A refused append, or a producer's duplicate (200 is a producer's new data), added nothing.
  const producer = request.headers.has(HEADER.producerId);
  try {
    // A new request each time it runs: one that needed more room runs again.
    const answer = await host.stored(current, (hook) => {
      const forwarded = new Request(request.url, { method: "POST", headers: request.headers, body });
      return parts.streams.handle(forwarded, generationStreamKey(row.id), requestId, hook);
    });
    if (!answer.ok || (producer && answer.status !== 200)) parts.recountAnswer(row.id);
    return answer;
  } catch (error) {
    parts.recountAnswer(row.id);
    throw error;
  }
}

const strictText = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The chunks of an append: its text (text), or its events (pi-ai, ai-sdk-ui), each checked. */
function checkedChunks(row: GenerationRow, body: Uint8Array): unknown[] {
  if (body.byteLength === 0) return [];
  let text: string;
  try {
    text = strictText.decode(body);
  } catch {
    throw new SessionError("invalid_request", "a chunk must be UTF-8 text");
  }
  if (row.format === "text") return [text];
  const value = tryParseJson(text);
  if (value === undefined) throw new SessionError("invalid_request", "the body is not valid JSON");
  const events = Array.isArray(value) ? value : [value];
  for (const [index, event] of events.entries()) checkChunk(row.format, event, index);
  return events;
}
