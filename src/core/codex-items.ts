import type { InputContent, LogLine } from "./agent-log";
import { dataUrlImage, isRecord } from "./agent-log";
import { parseJsonField } from "./json";

/*
 * What a Codex CLI line holds, whatever version wrote it: every line as `{timestamp, type,
 * payload}`, and the content of its response items (input and output text, images, a tool's
 * output and arguments) as ours.
 */

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

/** A tool's output as a result's content, and whether it failed (by its exit code, or `success`). */
export function outputText(
  output: unknown,
  unmapped: unknown[],
): { content: InputContent[]; isError: boolean; details?: unknown } {
  if (typeof output === "string") {
    // Versions up to late 2025 wrapped shell output as {"output", "metadata": {"exit_code"}}.
    // Plain text output is not JSON: it reads as undefined.
    const wrapped = parseJsonField(output, "a tool's output");
    if (isRecord(wrapped) && typeof wrapped.output === "string" && isRecord(wrapped.metadata)) {
      const code = wrapped.metadata.exit_code;
      return {
        content: [{ type: "text", text: wrapped.output }],
        isError: typeof code === "number" && code !== 0,
        details: wrapped.metadata,
      };
    }
    const code = /^Exit code: (\d+)/m.exec(output);
    return { content: [{ type: "text", text: output }], isError: code !== null && code[1] !== "0" };
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
