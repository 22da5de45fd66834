import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Context } from "hono";
import * as z from "zod";
import type { StoredEntry } from "../../core/entries";
import { Id } from "../../core/entries";
import { nonBlank } from "../../core/info";
import { ForkOptions } from "../../core/session-schemas";
import type { AppEnv } from "../env";
import { forkSession } from "../fork";
import { sessionStorage } from "../route-kit";
import { carried } from "./entry-places";
import { noteHead } from "./note-place";
import { sessionLine } from "./render";
import { sessionSummary } from "./session-summary";
import { answer, registerTool } from "./tool-kit";

/* The tools that write, offered only to a caller that may write: fork, label, note. */

const MAX_LABEL_CHARS = 1000;
const MAX_NOTE_CHARS = 100_000;

/**
 * The id the written entry takes: a call sent again with the same key and the same arguments is a
 * replay, answered with the entry as stored and written once; with other arguments, already_exists.
 */
const IdempotencyKey = Id.optional().describe(
  "an id of your choosing for the entry written: sent again with the same key, the call writes nothing more and answers the entry as stored (for a retry after a lost answer)",
);

export function writeTools(server: McpServer, c: Context<AppEnv>): void {
  registerTool(
    server,
    c,
    "fork_session",
    {
      title: "Branch from a session",
      description:
        "Use to continue from a past session without changing it: a new session holding its conversation up to entryId (default: its head). Answers the new session's id.",
      input: {
        sessionId: Id.describe("the session to fork"),
        entryId: Id.optional().describe("the last entry the fork keeps (default: the head)"),
        position: ForkOptions.shape.position.describe(
          "before: fork at the parent of entryId, a user message, to ask it again differently",
        ),
        newId: ForkOptions.shape.id.describe(
          "id of the new session (a fresh one when absent); sent again with the same newId, the call forks nothing more and answers already_exists",
        ),
        name: ForkOptions.shape.name,
      },
      readOnly: false,
    },
    async ({ sessionId, entryId, position, newId, name }) => {
      const info = await forkSession(c, sessionId, { entryId }, { position, id: newId, name });
      return answer(`forked ${sessionId} into ${sessionLine(info)}`, { session: sessionSummary(info) });
    },
  );

  registerTool(
    server,
    c,
    "label_entry",
    {
      title: "Label an entry",
      description:
        'Use to mark a moment worth finding again ("decision: use SQLite", "fix for the login bug"): labels are searched by search_sessions and shown in the tree. A blank label clears it.',
      input: {
        sessionId: Id.describe("the session holding the entry"),
        entryId: Id.describe("the entry to label"),
        label: z.string().max(MAX_LABEL_CHARS).describe("the label; blank clears it"),
        idempotencyKey: IdempotencyKey,
      },
      readOnly: false,
    },
    async ({ sessionId, entryId, label, idempotencyKey }) => {
      const result = await sessionStorage(c, sessionId).appendEntries([
        { type: "label", id: idempotencyKey, targetId: entryId, label },
      ]);
      // The label's own entry, as the first call answered it: on a replay the head may have moved
      // on past it, and is named apart.
      const labelId = (result.entries[0] as StoredEntry).id;
      const text = nonBlank(label) ?? "(cleared)";
      const said = result.created
        ? `labelled ${entryId} in ${sessionId}: ${text}`
        : `label ${labelId} on ${entryId} was written to ${sessionId} before (sent again: nothing written): ${text}; the head is now ${result.leafId}`;
      // leafId is the head too, under the name clients of earlier releases read it by.
      return answer(said, {
        labelId,
        headId: result.leafId,
        leafId: result.leafId,
        entries: carried(result.entries),
      });
    },
  );

  registerTool(
    server,
    c,
    "append_note",
    {
      title: "Append a note to a session",
      description:
        "Use to leave a note in a session for whoever reads it later (a conclusion, a follow-up): appended at its head as a note its model sees in the context.",
      input: {
        sessionId: Id.describe("the session to write to"),
        text: z.string().min(1).max(MAX_NOTE_CHARS).describe("the note"),
        idempotencyKey: IdempotencyKey,
      },
      readOnly: false,
    },
    async ({ sessionId, text, idempotencyKey }) => {
      const storage = sessionStorage(c, sessionId);
      // A note sent again after a lost answer is a replay, answered as stored wherever the head is now.
      const stored = idempotencyKey !== undefined && (await storage.getEntry(idempotencyKey)) !== undefined;
      // Written only if the head is still the one checked, and no generation is open as it is written.
      const head = stored ? {} : { expectedLeafId: await noteHead(storage) };
      const options = { ...head, refuseWhileGenerating: true };
      const result = await storage.appendEntries(
        [{ type: "custom_message", id: idempotencyKey, customType: "note", content: text, display: true }],
        options,
      );
      // The note's own entry: on a replay the head may have moved on past it.
      const noteId = (result.entries[0] as StoredEntry).id;
      const said = result.created
        ? `appended note ${noteId} to ${sessionId}`
        : `note ${noteId} was appended to ${sessionId} before (sent again: nothing written); the head is now ${result.leafId}`;
      // leafId is the head too, under the name clients of earlier releases read it by.
      return answer(said, {
        noteId,
        headId: result.leafId,
        leafId: result.leafId,
        entries: carried(result.entries),
      });
    },
  );
}
