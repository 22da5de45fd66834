import { describe, expect, it } from "vitest";
import { responseLines } from "../../src/client/response-lines";

/*
 * The client over HTTP as it arrives: answers in pieces split anywhere.
 */

/** An answer whose body comes in the given pieces of bytes. */
function answerIn(pieces: Uint8Array[]): Response {
  return new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(piece);
        controller.close();
      },
    }),
  );
}

async function linesOf(response: Response): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of responseLines(response)) lines.push(line);
  return lines;
}

describe("reading an NDJSON answer in pieces", () => {
  it("gives the same lines wherever the body is split, a last line without its newline included", async () => {
    const bytes = new TextEncoder().encode('{"type":"session"}\n{"a":"é"}\n\n{"b":2}\n{"c":3}');
    const whole = ['{"type":"session"}\n', '{"a":"é"}\n', '{"b":2}\n', '{"c":3}\n'];
    expect(await linesOf(answerIn([bytes]))).toEqual(whole);
    // Two cuts anywhere, the two bytes of "é" apart included.
    for (let first = 0; first <= bytes.length; first++)
      for (let second = first; second <= bytes.length; second++) {
        const pieces = [bytes.slice(0, first), bytes.slice(first, second), bytes.slice(second)];
        expect(await linesOf(answerIn(pieces)), `cut at ${first} and ${second}`).toEqual(whole);
      }
    expect(await linesOf(answerIn([...bytes].map((byte) => Uint8Array.of(byte))))).toEqual(whole);
  });
});
