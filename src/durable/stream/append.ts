import { SessionError } from "../../core/errors";
import { answer, tailHeaders } from "./answers";
import type { AppendHook } from "./append-hook";
import { readBody } from "./body";
import type { StreamContext } from "./context";
import { recordsOf } from "./create";
import { formatOffset } from "./offsets";
import type { ProducerLanes } from "./producers";
import { checkProducer, staleEpoch } from "./producers";
import type { AppendRequest } from "./protocol";
import { HEADER, MAX_APPEND_BYTES, mediaType, readAppendRequest } from "./protocol";
import type { StreamState } from "./store";

/*
 * POST: append to a stream, close it (`Stream-Closed: true`, with or without a last append), or
 * both at once. The checks run in the order the protocol gives them: a closed stream first, then
 * the content type, the producer's sequence, and `Stream-Seq`; a refused append writes nothing.
 * They run before the host is asked for room (a retry already written is a duplicate, whatever
 * room is left) and again once it is given; from the last check to the write nothing awaits, so no
 * other request comes between them.
 */

function producerHeaders(epoch: number, seq: number): Record<string, string> {
  return { [HEADER.producerEpoch]: String(epoch), [HEADER.producerSeq]: String(seq) };
}

/** What an append to a closed stream gets: a duplicate of the closing append is a success. */
function closedStream(
  context: StreamContext,
  stream: StreamState,
  input: AppendRequest,
  empty: boolean,
): Response {
  const { producer } = input;
  if (producer) {
    const by = stream.closedBy;
    if (by && by.id === producer.id && by.epoch === producer.epoch && by.seq === producer.seq) {
      return answer(204, { ...tailHeaders(stream), ...producerHeaders(by.epoch, by.seq) });
    }
    const state = context.store.producer(stream, producer.id);
    if (state && producer.epoch < state.epoch) throw staleEpoch(state.epoch, producer.epoch);
  } else if (empty && input.close) {
    return answer(204, tailHeaders(stream));
  }
  throw new SessionError("stream_closed", "the stream is closed: it takes no more data", {
    nextOffset: formatOffset(stream.tail),
  });
}

export function appendToStream(
  context: StreamContext,
  lanes: ProducerLanes,
  request: Request,
  key: string,
  hook?: AppendHook,
): Promise<Response> {
  const input = readAppendRequest(request.headers);
  const run = () => append(context, request, key, input, hook);
  return input.producer ? lanes.run(JSON.stringify([key, input.producer.id]), run) : run();
}

/** An append checked against the stream as it stands: what to write, or the answer when it writes nothing. */
type Checked = { stream: StreamState; records: Uint8Array[] } | Response;

async function check(
  context: StreamContext,
  key: string,
  input: AppendRequest,
  body: Uint8Array,
  recordsIn: (contentType: string) => Uint8Array[],
): Promise<Checked> {
  const stream = await context.visible(key);
  const empty = body.byteLength === 0;
  if (empty && !input.close) {
    throw new SessionError("invalid_request", "an append needs a body (send Stream-Closed: true to close)");
  }
  if (!empty && input.contentType === null) {
    throw new SessionError("invalid_request", "an append with a body needs a Content-Type");
  }
  if (stream.closed) return closedStream(context, stream, input, empty);
  if (!empty && mediaType(input.contentType) !== mediaType(stream.contentType)) {
    throw new SessionError("content_type_mismatch", `this stream takes ${stream.contentType}`, {
      contentType: stream.contentType,
    });
  }
  const records = recordsIn(stream.contentType);
  if (!empty && records.length === 0) {
    throw new SessionError("invalid_request", "an empty JSON array appends nothing");
  }
  const { producer } = input;
  if (producer) {
    const verdict = checkProducer(context.store.producer(stream, producer.id), producer);
    if (verdict.kind === "duplicate") {
      return answer(204, { ...tailHeaders(stream), ...producerHeaders(producer.epoch, verdict.lastSeq) });
    }
  }
  if (input.streamSeq !== null && stream.lastSeq !== null && input.streamSeq <= stream.lastSeq) {
    throw new SessionError("sequence_conflict", "Stream-Seq must be above the last one appended", {
      lastSeq: stream.lastSeq,
      seq: input.streamSeq,
    });
  }
  return { stream, records };
}

async function append(
  context: StreamContext,
  request: Request,
  key: string,
  input: AppendRequest,
  hook: AppendHook | undefined,
): Promise<Response> {
  // Refused before its body is read, when the stream is not there.
  await context.visible(key);
  const body = await readBody(request, MAX_APPEND_BYTES);
  let parsed: { contentType: string; records: Uint8Array[] } | undefined;
  const recordsIn = (contentType: string) => {
    if (parsed?.contentType !== contentType) parsed = { contentType, records: recordsOf(contentType, body) };
    return parsed.records;
  };
  // An append that writes nothing (a retry already written, a closed stream, a refusal) asks for no
  // room: checked before room is asked for, and again once it is given, for what came meanwhile.
  let checked = await check(context, key, input, body, recordsIn);
  if (checked instanceof Response) return checked;
  if (hook?.reserve) {
    await hook.reserve(body.byteLength);
    checked = await check(context, key, input, body, recordsIn);
    if (checked instanceof Response) return checked;
  }
  const { stream, records } = checked;
  const { producer } = input;
  const empty = body.byteLength === 0;
  const before = stream.tail.bytes;
  const tail = context.transact(() => {
    const written = context.store.append(stream, {
      records,
      close: input.close,
      producer,
      streamSeq: input.streamSeq,
      now: context.now(),
    });
    // What the stream holds more, not the body: JSON mode keeps each message without the array's
    // brackets, commas and the spaces around it.
    hook?.appended(written.bytes - before);
    return written;
  }, hook?.held);
  context.written(stream);
  const headers = {
    [HEADER.nextOffset]: formatOffset(tail),
    ...(input.close ? { [HEADER.closed]: "true" } : {}),
    ...(producer ? producerHeaders(producer.epoch, producer.seq) : {}),
  };
  // A producer's new data is 200 (a duplicate is 204), so the two can be told apart.
  return answer(producer && !empty ? 200 : 204, headers);
}
