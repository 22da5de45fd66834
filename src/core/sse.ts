/*
 * Server-Sent Events, written one way for every event stream the service serves (a session's
 * events, a tenant's, a Durable Stream's) and read back one way. An event's data is split at every
 * line end (CR, LF or CRLF), each line its own `data:` line, so nothing in the data can end the
 * event or start another. Readers strip one space after the colon, so a line that starts with a
 * space gets one more; readers join the lines with LF.
 */

export interface SseEvent {
  event: string;
  id?: string | number;
  data: string;
}

/** A comment line a stream sends when nothing else happens, so that proxies keep it open. */
export const SSE_KEEP_ALIVE = ": keep-alive\n\n";

/** One event as Server-Sent Events text. */
export function sseText({ event, id, data }: SseEvent): string {
  const idLine = id === undefined ? "" : `id: ${id}\n`;
  let text = `event: ${event}\n${idLine}`;
  for (const line of data.split(/\r\n|\r|\n/))
    text += line.startsWith(" ") ? `data: ${line}\n` : `data:${line}\n`;
  return `${text}\n`;
}

/**
 * Reads Server-Sent Events from text arriving in pieces: `push` a piece, get back the events it
 * completed. Comments (heartbeats) are skipped; fields other than event, id and data are ignored.
 */
export class SseReader {
  /** The text after the last complete event. */
  #rest = "";
  /**
   * The last characters of `#rest`: a blank line that the next piece completes starts among them.
   * Only they and the new piece are searched, so an event that comes in many pieces is read in
   * time that grows with its length, not with its length times its pieces.
   */
  #tail = "";

  push(text: string): Array<{ event: string; id?: string; data: string }> {
    const events: Array<{ event: string; id?: string; data: string }> = [];
    const searched = this.#tail + text;
    const from = this.#rest.length - this.#tail.length;
    this.#rest += text;
    this.#tail = searched.slice(-3);
    if (!/\r?\n\r?\n/.test(searched)) return events;
    const buffer = this.#rest;
    const blankLine = /\r?\n\r?\n/g;
    blankLine.lastIndex = from;
    let start = 0;
    for (let end = blankLine.exec(buffer); end !== null; end = blankLine.exec(buffer)) {
      const block = buffer.slice(start, end.index);
      start = end.index + end[0].length;
      let event = "message";
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line === "" || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "id") id = value;
        else if (field === "data") data.push(value);
      }
      if (data.length > 0)
        events.push(
          id === undefined ? { event, data: data.join("\n") } : { event, id, data: data.join("\n") },
        );
    }
    this.#rest = buffer.slice(start);
    this.#tail = this.#rest.slice(-3);
    return events;
  }
}
