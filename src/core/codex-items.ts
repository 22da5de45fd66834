import type { InputContent, LogLine } from "./agent-log";
import { dataUrlImage, isRecord } from "./agent-log";
import { isValidId } from "./ids";
import { parseJsonField } from "./json";
import { filledHole, holeFor, isHole, keptItem, writtenItem } from "./source-lines";

/*
 * What a Codex CLI line holds, whatever version wrote it: every line as `{timestamp, type,
 * payload}`, and the content of its response items (input and output text, images, a tool's
 * output and arguments) as ours, and back.
 */

/**
 * The field of a rollout's `session_meta` in which an export records how it was made: `session`,
 * the session exported; `head`, its head the export was made at; `seq`, the session's last `seq`
 * then. The file's lines are read under ids made from it (`s<seq>.l<n>`), so the lines an agent
 * adds are named apart from the session's entries, those of another export, and those of a branch
 * the head left, which held the same places. Codex passes over fields of the line it does not
 * know, and goes on in a rollout by appending to it, so the line keeps the record.
 */
export const EXPORT_RECORD = "cf_sessions";

/** How an export was made, as its `session_meta` records it (`EXPORT_RECORD`). */
export interface ExportRecord {
  session: string;
  head: string;
  seq: number;
}

/** The export record of a `session_meta` payload, when it holds one. */
export function exportRecord(meta: Record<string, unknown>): ExportRecord | undefined {
  const record = meta[EXPORT_RECORD];
  if (!isRecord(record) || !isValidId(record.session) || !isValidId(record.head)) return undefined;
  const { session, head, seq } = record;
  return typeof seq === "number" && Number.isSafeInteger(seq) && seq >= 0
    ? { session, head, seq }
    : undefined;
}

/** What the ids of a rollout's lines start with: `s<seq>.` when an export recorded itself in it. */
export function lineIdPrefix(record: ExportRecord | undefined): string {
  return record === undefined ? "" : `s${record.seq}.`;
}

/** Response items that are part of the model's output. */
export const OUTPUT_ITEMS = new Set(["reasoning", "function_call", "custom_tool_call", "local_shell_call"]);
/** Response items as versions before `payload` lines wrote them, bare. */
const BARE_ITEMS = new Set([...OUTPUT_ITEMS, "message", "function_call_output", "custom_tool_call_output"]);

/** A line of any Codex version as `{timestamp, type, payload}`. */
export function normalized(line: LogLine, index: number): Record<string, unknown> {
  const value = line.value;
  if ("payload" in value || typeof value.record_type === "string") return value;
  if (index === 0 && typeof value.id === "string" && value.type === undefined) {
    return { timestamp: value.timestamp, type: "session_meta", payload: value };
  }
  if (typeof value.type === "string" && BARE_ITEMS.has(value.type)) {
    return { timestamp: value.timestamp, type: "response_item", payload: value };
  }
  return value;
}

/** Text and images of a message's content; parts that are neither go to `unmapped`. */
export function inputContent(content: unknown, unmapped: unknown[]): InputContent[] {
  const parts: InputContent[] = [];
  for (const part of Array.isArray(content) ? content : []) {
    if (
      isRecord(part) &&
      (part.type === "input_text" || part.type === "output_text") &&
      typeof part.text === "string"
    ) {
      parts.push({ type: "text", text: part.text });
      continue;
    }
    const image = isRecord(part) && part.type === "input_image" ? dataUrlImage(part.image_url) : undefined;
    if (image) parts.push(image);
    else unmapped.push(part);
  }
  return parts;
}

/**
 * The header Codex's `exec_command` puts before a command's output: its chunk, time and exit code
 * (`Chunk ID: …`, `Wall time: …`, `Process exited with code N`, `Original token count: …`), then
 * `Output:`.
 */
const EXEC_HEADER = /^Chunk ID: [^\n]*\n(?:[^\n]*\n){0,6}?Output:(?:\n|$)/;

/**
 * Whether a shell output tells a failed command as Codex writes it: `Exit code: N` on its first
 * line, or `Process exited with code N` in an `exec_command` header; N not 0.
 */
function failedCommand(output: string): boolean {
  const header = EXEC_HEADER.exec(output)?.[0];
  const code = header
    ? /^Process exited with code (-?\d+)$/m.exec(header)
    : /^Exit code: (-?\d+)/.exec(output);
  return code !== null && Number(code[1]) !== 0;
}

/**
 * A tool's output as a result's content, and whether it failed: by its exit code (the wrapped
 * output's `metadata.exit_code`, or the code Codex starts shell output with), or by `success`. The metadata of a wrapped output is the result's details, unless it holds nothing
 * but the exit code (which `isError` tells).
 */
export function outputText(
  output: unknown,
  unmapped: unknown[],
): { content: InputContent[]; isError: boolean; details?: unknown } {
  if (typeof output === "string") {
    // Versions up to late 2025 wrapped shell output as {"output", "metadata": {"exit_code"}}.
    // Plain text output is not JSON: it reads as undefined.
    const wrapped = parseJsonField(output, "a tool's output");
    if (isRecord(wrapped) && typeof wrapped.output === "string" && isRecord(wrapped.metadata)) {
      const { exit_code: code, ...rest } = wrapped.metadata;
      const text: InputContent = { type: "text", text: wrapped.output };
      const isError = typeof code === "number" && code !== 0;
      if (Object.keys(rest).length === 0 && typeof code === "number") return { content: [text], isError };
      return { content: [text], isError, details: wrapped.metadata };
    }
    return { content: [{ type: "text", text: output }], isError: failedCommand(output) };
  }
  if (isRecord(output) && typeof output.content === "string") {
    return { content: [{ type: "text", text: output.content }], isError: output.success === false };
  }
  const items = Array.isArray(output) ? output : isRecord(output) ? [output] : [];
  return { content: inputContent(items, unmapped), isError: false };
}

/** A tool call's arguments: an object, or JSON text of one. */
export function toolArguments(raw: unknown): Record<string, unknown> | undefined {
  if (isRecord(raw)) return raw;
  if (typeof raw !== "string") return undefined;
  const parsed = parseJsonField(raw, "tool call arguments");
  return isRecord(parsed) ? parsed : undefined;
}

/** The content item a message part is written as: text as `input_text` (`output_text` from the model), an image as a data URL. */
export function contentItem(part: InputContent, fromModel: boolean): Record<string, unknown> {
  if (part.type === "text") return { type: fromModel ? "output_text" : "input_text", text: part.text };
  return { type: "input_image", image_url: `data:${part.mimeType};base64,${part.data}` };
}

/**
 * A message's content as parts (the model's own: text only), and as kept beside its entry: a hole
 * for each part (see source-lines.ts), every other item as written.
 */
export function readContent(
  content: unknown,
  fromModel: boolean,
): { parts: InputContent[]; kept: unknown[] } {
  const parts: InputContent[] = [];
  const kept = (Array.isArray(content) ? content : []).map((item) => {
    const [part] = inputContent([item], []);
    if (!part || (fromModel && part.type !== "text")) return keptItem(item);
    parts.push(part);
    return holeFor(item as Record<string, unknown>, contentItem(part, fromModel)) ?? item;
  });
  return { parts, kept };
}

/** Kept content with its holes filled from `parts` from `next` on, and the index after the last used. */
export function filledContent(
  kept: readonly unknown[],
  parts: readonly InputContent[],
  next: number,
  fromModel: boolean,
): { content: unknown[]; next: number } {
  let at = next;
  const content: unknown[] = [];
  for (const item of kept) {
    if (isHole(item)) {
      const part = parts[at++];
      if (part) content.push(filledHole(item, contentItem(part, fromModel)));
      continue;
    }
    const written = writtenItem(item);
    const [part] = inputContent([written], []);
    if (part && !(fromModel && part.type !== "text")) at++;
    content.push(written);
  }
  return { content, next: at };
}

/**
 * The output a tool result is written as: its text, or its items. Text with `details` is wrapped
 * as Codex up to late 2025 wrote shell output, `{"output", "metadata"}` with the details as
 * metadata. A failed result whose details or text do not tell its failure already (an exit code
 * other than 0) is wrapped too, its metadata's `exit_code` 1.
 */
export function toolOutput(result: { content: unknown; details?: unknown; isError?: boolean }): unknown {
  const content = Array.isArray(result.content) ? (result.content as InputContent[]) : [];
  const only = content.length === 1 && content[0]?.type === "text" ? content[0].text : undefined;
  if (only === undefined) return content.map((part) => contentItem(part, false));
  const details = isRecord(result.details) ? result.details : undefined;
  const code = details?.exit_code;
  const told = (typeof code === "number" && code !== 0) || failedCommand(only);
  if (result.isError === true && !told) {
    return JSON.stringify({ output: only, metadata: { ...details, exit_code: 1 } });
  }
  if (details) return JSON.stringify({ output: only, metadata: details });
  return only;
}

/** The field a tool call keeps its arguments in, and the value it is written back as. */
export function callArguments(
  type: unknown,
  args: Record<string, unknown>,
): { field: string; value: unknown } {
  if (type === "local_shell_call") return { field: "action", value: args };
  if (type === "custom_tool_call") return { field: "input", value: args.input };
  return { field: "arguments", value: JSON.stringify(args) };
}
