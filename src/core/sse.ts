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
  #rest = "";

  push(text: string): Array<{ event: string; id?: string; data: string }> {
    this.#rest += text;
    const events: Array<{ event: string; id?: string; data: string }> = [];
    for (;;) {
      const end = this.#rest.search(/\r?\n\r?\n/);
      if (end < 0) break;
      const block = this.#rest.slice(0, end);
      this.#rest = this.#rest.slice(end + (this.#rest[end] === "\r" ? 4 : 2));
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
    return events;
  }
}
