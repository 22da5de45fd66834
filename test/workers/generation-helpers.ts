import { expect } from "vitest";
import type { GenerationInfo } from "../../src/core/generations/generation-schemas";
import { api, createSession, userMessage } from "./helpers";
import { call, head } from "./stream-helpers";

/** A session holding one user message, and that message's id. */
export async function sessionWithQuestion(key?: string): Promise<{ id: string; questionId: string }> {
  const id = await createSession({ key });
  const res = await api("POST", `/v1/sessions/${id}/entries`, { key, body: userMessage("Hello?") });
  expect(res.status).toBe(201);
  return { id, questionId: res.body.entries[0].id };
}

export async function openGeneration(
  id: string,
  body: Record<string, unknown> = {},
  key?: string,
): Promise<GenerationInfo> {
  const res = await api("POST", `/v1/sessions/${id}/generations`, { body, key });
  expect(res.status, res.text).toBe(201);
  return res.body as GenerationInfo;
}

export function appendText(
  stream: string,
  text: BodyInit,
  headers: Record<string, string> = {},
  key?: string,
) {
  return call("POST", stream, { key, body: text, headers: { "Content-Type": "text/plain", ...headers } });
}

/** Appends `events` as JSON (or `text`, when given, as it is). */
export function appendEvents(
  stream: string,
  events: unknown,
  headers: Record<string, string> = {},
  key?: string,
  text?: string,
) {
  return call("POST", stream, {
    key,
    body: text ?? JSON.stringify(events),
    headers: { "Content-Type": "application/json", ...headers },
  });
}

export function endGeneration(
  id: string,
  gid: string,
  how: "complete" | "stop",
  body: unknown = {},
  key?: string,
) {
  return api("POST", `/v1/sessions/${id}/generations/${gid}/${how}`, { body, key });
}

/** What a refused request must leave as it was: the session's entries, the stream's tail and state. */
export async function snapshot(id: string, stream: string) {
  const session = await api("GET", `/v1/sessions/${id}`);
  const tail = await head(stream);
  return { entryCount: session.body.entryCount, leafId: session.body.leafId, ...tail };
}
