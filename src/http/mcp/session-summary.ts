import { PREVIEW_CHARS } from "../../core/limits";
import type { SessionInfo } from "../../core/session-schemas";

/*
 * A session as a tool's structured content shows it: what tells it apart, never what may be large.
 * The system prompt (up to 1 MiB) and the metadata (up to 256 KiB) come as their sizes only, and
 * a long name is cut, so that a listing of a hundred sessions stays a page; GET /v1/sessions/:sid
 * answers them whole.
 */

export type SessionSummary = Omit<SessionInfo, "systemPrompt" | "metadata"> & {
  /** Characters of the name, when `name` holds only its start. */
  nameChars?: number;
  /** Characters of the system prompt, when the session has one. */
  systemPromptChars?: number;
  /** Characters of the metadata's JSON. */
  metadataChars: number;
};

/** A name at most this long is shown whole; a longer one by its start and its length. */
export const MAX_SUMMARY_NAME_CHARS = PREVIEW_CHARS;

export function sessionSummary(info: SessionInfo): SessionSummary {
  const { systemPrompt, metadata, name, ...rest } = info;
  return {
    ...rest,
    ...(name === undefined ? {} : { name: shortName(name) }),
    ...(name !== undefined && name.length > MAX_SUMMARY_NAME_CHARS ? { nameChars: name.length } : {}),
    ...(systemPrompt === undefined ? {} : { systemPromptChars: systemPrompt.length }),
    metadataChars: JSON.stringify(metadata).length,
  };
}

/** A name as a summary or a line shows it: whole, or its start followed by "…". */
export function shortName(name: string): string {
  return name.length <= MAX_SUMMARY_NAME_CHARS ? name : `${name.slice(0, MAX_SUMMARY_NAME_CHARS)}…`;
}
