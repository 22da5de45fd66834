import { describe, expect, it } from "vitest";
import { SSE_KEEP_ALIVE, SseReader, sseText } from "../../src/core/sse";

describe("Server-Sent Events", () => {
  it("writes each line of the data as its own data line, whatever ends it", () => {
    expect(sseText({ event: "data", data: "a\r\nb\rc\nd" })).toBe(
      "event: data\ndata:a\ndata:b\ndata:c\ndata:d\n\n",
    );
    expect(sseText({ event: "entry", id: 7, data: "{}" })).toBe("event: entry\nid: 7\ndata:{}\n\n");
  });

  it("reads back what it wrote: data that looks like events stays data, leading spaces kept", () => {
    const data = [
      'start\r\n\r\nevent: control\r\ndata: {"injected":true}',
      " one leading space",
      "  two",
      "",
      "\n",
      "end\r",
    ];
    const reader = new SseReader();
    const text = data.map((d, i) => sseText({ event: "data", id: i, data: d })).join(SSE_KEEP_ALIVE);
    // Sent in pieces of 3 characters, as a network may split it.
    const read = [];
    for (let at = 0; at < text.length; at += 3) read.push(...reader.push(text.slice(at, at + 3)));
    expect(read).toEqual(
      data.map((d, i) => ({ event: "data", id: String(i), data: d.replace(/\r\n|\r/g, "\n") })),
    );
  });

  it("reads the same events wherever the text is split, a CRLF blank line across pieces included", () => {
    const text =
      'event: a\nid: 1\ndata:{"n":1}\n\n: keep-alive\r\n\r\nevent: b\r\nid: 2\r\ndata:x\r\ndata: y\r\n\r\ndata:z\n\n';
    const whole = new SseReader().push(text);
    expect(whole).toEqual([
      { event: "a", id: "1", data: '{"n":1}' },
      { event: "b", id: "2", data: "x\ny" },
      { event: "message", data: "z" },
    ]);
    for (let first = 0; first <= text.length; first++) {
      for (let second = first; second <= text.length; second++) {
        const reader = new SseReader();
        const read = [first, second, text.length].flatMap((end, i, ends) =>
          reader.push(text.slice(i === 0 ? 0 : ends[i - 1], end)),
        );
        expect(read, `split at ${first} and ${second}`).toEqual(whole);
      }
    }
    // One character at a time.
    const reader = new SseReader();
    expect([...text].flatMap((character) => reader.push(character))).toEqual(whole);
  });
});
