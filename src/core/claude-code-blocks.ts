import type { InputContent } from "./agent-log";
import type { AssistantMessage, ToolResultMessage } from "./messages";
import { anthropicAssistantBlock, anthropicUserBlock } from "./providers/from-anthropic";
import { isRecord } from "./providers/incoming";
import { filledHole, holeFor, isHole, writtenItem } from "./source-lines";

/*
 * Content blocks of Claude Code lines both ways: what a block becomes (`from-anthropic`'s reading,
 * as the import reads it) and the block a message part is written back as. A line's content is
 * kept with a hole for each block a message holds (see source-lines.ts), filled again on export.
 */

type Block = Record<string, unknown>;
type AssistantPart = AssistantMessage["content"][number];

/** The block an assistant part is written as (the reading of `anthropicAssistantBlock` reversed). */
export function assistantBlock(part: AssistantPart): Block {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text };
    case "thinking":
      if (part.redacted === true) return { type: "redacted_thinking", data: part.thinkingSignature ?? "" };
      return part.thinkingSignature === undefined
        ? { type: "thinking", thinking: part.thinking }
        : { type: "thinking", thinking: part.thinking, signature: part.thinkingSignature };
    default:
      return { type: "tool_use", id: part.id, name: part.name, input: part.arguments };
  }
}

/** The block a user message's text or image is written as. */
export function userBlock(part: InputContent): Block {
  if (part.type === "text") return { type: "text", text: part.text };
  return { type: "image", source: { type: "base64", media_type: part.mimeType, data: part.data } };
}

/**
 * The `tool_result` block of a result: its text as a string when that is all, else each part as
 * `blockOf` writes it; `is_error` only when set.
 */
export function toolResultBlock(
  result: ToolResultMessage,
  blockOf: (part: InputContent) => Block = userBlock,
): Block {
  const content = result.content as InputContent[];
  const block: Block = { type: "tool_result", tool_use_id: result.toolCallId };
  const only = content.length === 1 ? content[0] : undefined;
  if (only?.type === "text") block.content = only.text;
  else if (content.length > 0) block.content = content.map(blockOf);
  if (result.isError) block.is_error = true;
  return block;
}

/** Whether the import reads a user block as a tool result. */
export function isToolResultBlock(block: unknown): block is Block {
  return isRecord(block) && block.type === "tool_result" && typeof block.tool_use_id === "string";
}

/** A block held by a part, as kept: its hole, or the block itself when the part cannot give it back. */
export function heldBlock(block: Block, rebuilt: Block, always: readonly string[] = []): unknown {
  return holeFor(block, rebuilt, always) ?? block;
}

/**
 * An assistant line's content, its holes filled from `parts` from `next` on, and the index after
 * the last part used. A hole no part is left for (lines that do not match their entry) is left out.
 */
export function filledAssistantContent(
  kept: readonly unknown[],
  parts: readonly AssistantPart[],
  next: number,
): { content: unknown[]; next: number } {
  let at = next;
  const content: unknown[] = [];
  for (const item of kept) {
    if (isHole(item)) {
      const part = parts[at++];
      if (part) content.push(filledHole(item, assistantBlock(part)));
      continue;
    }
    const written = writtenItem(item);
    if (anthropicAssistantBlock(written)) at++;
    content.push(written);
  }
  return { content, next: at };
}

/**
 * An assistant line's content as a context edit leaves its entry: the blocks the entry holds give
 * way to `parts` (the edited message's), put where the first of them stood (`placed`: whether an
 * earlier line of the entry took them); what the entry does not hold stays.
 */
export function editedAssistantContent(
  kept: readonly unknown[],
  parts: readonly AssistantPart[],
  placed: boolean,
): { content: unknown[]; placed: boolean } {
  let put = placed;
  const content: unknown[] = [];
  for (const item of kept) {
    const written = isHole(item) ? undefined : writtenItem(item);
    if (written !== undefined && !anthropicAssistantBlock(written)) {
      content.push(written);
      continue;
    }
    if (!put) content.push(...parts.map(assistantBlock));
    put = true;
  }
  return { content, placed: put };
}

/**
 * What context edits leave of a user line's entries: by each result's place among the line's, the
 * result as edited (null when left out); and the user message's parts as edited (none when it is
 * left out), when it is.
 */
export interface UserLineEdits {
  results: ReadonlyMap<number, ToolResultMessage | null>;
  parts?: readonly InputContent[];
}

/**
 * A user line's content, its holes filled: a hole with `tool_use_id` from the next result, any
 * other from the next part of the user message (a hole none is left for is left out). A result an
 * edit changed is written from the edit (under its `tool_use_id`), one it left out is left out;
 * edited parts stand where the user message's first block stood, in place of all of them.
 */
export function filledUserContent(
  kept: readonly unknown[],
  results: readonly ToolResultMessage[],
  parts: readonly InputContent[],
  edits?: UserLineEdits,
): unknown[] {
  let result = 0;
  let part = 0;
  let partsPut = false;
  const content: unknown[] = [];
  const putEditedParts = (edited: readonly InputContent[]) => {
    if (!partsPut) content.push(...edited.map((p) => userBlock(p)));
    partsPut = true;
  };
  for (const item of kept) {
    const written = isHole(item) ? undefined : writtenItem(item);
    const isResult =
      written === undefined ? Object.hasOwn(item as object, "tool_use_id") : isToolResultBlock(written);
    if (isResult) {
      const edit = edits?.results.get(result);
      const message = results[result++];
      const held = (written ?? item) as Record<string, unknown>;
      if (edit === null) continue;
      if (edit) content.push({ ...toolResultBlock(edit), tool_use_id: held.tool_use_id });
      else if (written !== undefined) content.push(written);
      else if (message) content.push(filledHole(held, toolResultBlock(message)));
      continue;
    }
    const isPart = written === undefined || anthropicUserBlock(written) !== undefined;
    if (isPart && edits?.parts) {
      part++;
      putEditedParts(edits.parts);
      continue;
    }
    if (written !== undefined) {
      if (isPart) part++;
      content.push(written);
      continue;
    }
    const rebuilt = parts[part] && userBlock(parts[part++] as InputContent);
    if (rebuilt) content.push(filledHole(item as Record<string, unknown>, rebuilt));
  }
  if (edits?.parts) putEditedParts(edits.parts);
  return content;
}
