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
});
