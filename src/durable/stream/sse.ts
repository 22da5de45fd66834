import { sseText } from "../../core/sse";

/*
 * A stream read as Server-Sent Events (PROTOCOL.md 5.8): a `data` event for each batch, every one
 * followed by a `control` event saying where the reader stands. Binary data goes as base64.
 */

export interface Control {
  streamNextOffset: string;
  streamCursor?: string;
  upToDate?: true;
  streamClosed?: true;
}

export function dataEvent(text: string): string {
  return sseText({ event: "data", data: text });
}

export function controlEvent(control: Control): string {
  return sseText({ event: "control", data: JSON.stringify(control) });
}
