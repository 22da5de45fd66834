import type { ContextEditEntry, StoredEntry, TreeEntry } from "./entries";
import { SessionError } from "./errors";
import type { AgentMessage } from "./messages";

/*
 * pi 1.6's context edits: an entry appended later that changes what an earlier entry contributes
 * to the context, leaving the entry itself as it was. The latest edit of a target among the
 * entries a context projects wins; `null` leaves the target out, a replacement changes only the
 * content of a user, assistant, tool-result or custom message (a string becomes one text block
 * where the role needs blocks). An edit on another branch is not among those entries, so it does
 * not apply.
 */

/** Roles whose content a replacement changes. */
const EDITABLE_ROLES = new Set(["user", "assistant", "toolResult", "custom"]);

/** Whether an edit may name `entry` when it is appended: user, assistant and tool-result messages, custom messages. */
export function isEditableEntry(entry: { type?: unknown; message?: unknown }): boolean {
  if (entry.type === "custom_message") return true;
  if (entry.type !== "message") return false;
  const role = (entry.message as { role?: unknown } | undefined)?.role;
  return role === "user" || role === "assistant" || role === "toolResult";
}

/** The latest context edit of each entry on a branch, by the id of the entry it names. */
export type BranchEdits = ReadonlyMap<string, Pick<ContextEditEntry, "replacement">>;

/** The latest edit of each target among `entries`, in order. */
export function latestEdits(entries: Iterable<TreeEntry>): Map<string, ContextEditEntry> {
  const edits = new Map<string, ContextEditEntry>();
  for (const entry of entries) if (entry.type === "context_edit") edits.set(entry.targetId, entry);
  return edits;
}

/** What an entry's messages become under `edit` (unchanged without one). */
export function applyContextEdit(
  messages: readonly AgentMessage[],
  edit: Pick<ContextEditEntry, "replacement"> | undefined,
): AgentMessage[] {
  if (!edit) return [...messages];
  const replacement = edit.replacement;
  if (replacement === null) return [];
  return messages.map((message) => {
    if (!EDITABLE_ROLES.has(message.role)) return message;
    const blocks = message.role === "assistant" || message.role === "toolResult";
    const content =
      blocks && typeof replacement.content === "string"
        ? [{ type: "text", text: replacement.content }]
        : replacement.content;
    return { ...message, content } as AgentMessage;
  });
}

/** What checking an edit's target needs of the session: an entry, and whether it is on a branch. */
export interface EditTargetLookup {
  load(id: string): StoredEntry | undefined;
  /** Whether `ancestorId` is `fromId` or one of its ancestors. */
  onPath(ancestorId: string, fromId: string | null): boolean;
}

/**
 * The rules pi 1.6 applies when it appends an edit, applied to ours: the target exists, lies on
 * the branch the edit is appended to (at or above its parent), and is a message an edit may name.
 * Each failure is `invalid_tree`; imports are not checked (what pi reads, we read).
 */
export function checkEditTarget(targetId: string, parentId: string | null, lookup: EditTargetLookup): void {
  const target = lookup.load(targetId);
  if (!target || target.type === "leaf") {
    throw new SessionError("invalid_tree", `context edit target ${targetId} does not exist`, { targetId });
  }
  if (!lookup.onPath(targetId, parentId)) {
    throw new SessionError(
      "invalid_tree",
      `context edit target ${targetId} is not on the branch the edit is appended to`,
      { targetId },
    );
  }
  if (!isEditableEntry(target)) {
    throw new SessionError(
      "invalid_tree",
      `context edit target ${targetId} is not a user, assistant or tool-result message or a custom message`,
      { targetId },
    );
  }
}
