/*
 * Server-Sent Events as the protocol frames them (PROTOCOL.md 5.8): a `data` event for each batch,
 * every one followed by a `control` event saying where the reader stands. Text is split at every
 * line end (CR, LF or CRLF), each line its own `data:` line, so nothing in a stream can end an
 * event or start one; binary data goes as base64.
 */

export interface Control {
  streamNextOffset: string;
  streamCursor?: string;
  upToDate?: true;
  streamClosed?: true;
}

/** A `data:` line; one space is added before a line that starts with a space, which readers strip. */
function dataLine(line: string): string {
  return line.startsWith(" ") ? `data: ${line}\n` : `data:${line}\n`;
}

export function dataEvent(text: string): string {
  return `event: data\n${text
    .split(/\r\n|\r|\n/)
    .map(dataLine)
    .join("")}\n`;
}

export function controlEvent(control: Control): string {
  return `event: control\ndata:${JSON.stringify(control)}\n\n`;
}

export const KEEPALIVE = ": keepalive\n\n";
