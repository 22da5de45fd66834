import type { Line, PlacedLine, Written } from "./agent-export";
import { conversation, customLine, HeldEntries, inSessionOrder, LineOrder, lineTime } from "./agent-export";
import { isUuid, uuidFor } from "./agent-ids";
import type { InputContent } from "./agent-log";
import { asString, isRecord } from "./agent-log";
import type { ExportRecord } from "./codex-items";
import {
  callArguments,
  contentItem,
  EXPORT_RECORD,
  filledContent,
  OUTPUT_ITEMS,
  toolOutput,
} from "./codex-items";
import { deriveState } from "./context";
import type { BranchEdits } from "./context-edits";
import { applyContextEdit, latestEdits } from "./context-edits";
import type { CompactionEntry, ContextEditEntry, SessionEntry, TreeEntry } from "./entries";
import { nonBlank } from "./info";
import { sessionEntries } from "./interchange";
import { tryParseJson } from "./json";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "./messages";
import { toModelMessage } from "./providers/pi-messages";
import { AnsweredCallIds, OPENAI_RESPONSES_IDS } from "./providers/tool-call-ids";
import type { Session } from "./session";
import type { SourceFields } from "./source-lines";
import { isHole, sourceOf } from "./source-lines";

/*
 * A session as a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`).
 *
 * What was imported from a rollout goes back as the lines it was made from, in the file's order:
 * each entry keeps its lines without what it holds, and the export fills them again from it.
 *
 * What was written anywhere else becomes the lines Codex writes for the conversation on the
 * current branch: a `session_meta` line (when no line of a rollout holds the session), a
 * `turn_context` with the model, then `response_item`s (user messages with their `user_message`
 * event, the model's reasoning, text and function calls, then a `turn_aborted` or `error` event when
 * the reply did not finish, the calls' outputs), the latest
 * compaction as a `compacted` line whose replacement history is what Codex continues from, and
 * the session's name as a `thread_name_updated` event.
 *
 * A rollout that is not the one the session was imported from as it was (lines were written for
 * what no line of a rollout holds, or the head has entries under it) records how it was made in
 * its `session_meta` (`EXPORT_RECORD`): a sync of the file once Codex went on in it reads it as
 * that export, wherever the head went since. Codex's lines are read under ids made from their
 * places, so without it the lines for entries a head moved back left out would read as Codex's,
 * and the lines Codex adds could take the places of the lines of the branch the head left.
 */

/** The version of the Codex CLI whose line shapes new lines follow. */
export const CODEX_VERSION = "0.135.0";

const PREFIX = "codex:";

export interface CodexExportOptions {
  /**
   * The thread id of the rollout: by default the one the session was imported with when its id was
   * made from that one or it is no fork (a fork has its own), else a UUID made from its id.
   */
  threadId?: string;
  /** The working folder new lines record: by default the one the session recorded. */
  cwd?: string;
}

function messageOf(entry: SessionEntry): AgentMessage | undefined {
  return entry.type === "message" ? entry.message : undefined;
}

/** A message entry's lines, each filled again from the message's parts in order. */
function messageLines(message: AgentMessage, lines: readonly Line[]): Line[] {
  const content = (message as { content?: unknown }).content;
  const parts = (Array.isArray(content) ? content : []) as Array<AssistantMessage["content"][number]>;
  const fromModel = message.role === "assistant";
  let next = 0;
  return lines.map((line) => {
    const payload = isRecord(line.payload) ? line.payload : undefined;
    if (!payload) return line;
    const type = payload.type;
    let written = payload;
    if (type === "message" && Array.isArray(payload.content)) {
      const filled = filledContent(payload.content, parts as InputContent[], next, fromModel);
      next = filled.next;
      written = { ...payload, content: filled.content };
    } else if (type === "reasoning") {
      const part = parts[next++];
      const item = part?.type === "thinking" ? tryParseJson(part.thinkingSignature ?? "") : undefined;
      if (isRecord(item)) written = item;
    } else if (OUTPUT_ITEMS.has(type as string)) {
      const part = parts[next++];
      const call = part?.type === "toolCall" ? callArguments(type, part.arguments) : undefined;
      if (call && !Object.hasOwn(payload, call.field)) written = { ...payload, [call.field]: call.value };
    } else if (
      (type === "function_call_output" || type === "custom_tool_call_output") &&
      !Object.hasOwn(payload, "output")
    ) {
      written = { ...payload, output: toolOutput(message as ToolResultMessage) };
    }
    return written === payload ? line : { ...line, payload: written };
  });
}

/**
 * A message entry's lines as a context edit leaves it (`message`, undefined when the edit leaves
 * it out): a tool result's lines keep their call, the output written from the edit; another
 * message's content goes as one message item in the place of its first line, the entry's other
 * lines left out; none of them for a message left out.
 */
function editedLines(message: AgentMessage | undefined, lines: readonly Line[]): Line[] {
  const [first] = lines;
  if (!message || !first) return [];
  if (message.role === "toolResult")
    return lines.map((line) => {
      const payload = isRecord(line.payload) ? line.payload : undefined;
      if (!payload || !OUTPUT_TYPES.has(payload.type as string)) return line;
      return { ...line, payload: { ...payload, output: toolOutput(message as ToolResultMessage) } };
    });
  const content = (message as { content?: unknown }).content;
  const parts: InputContent[] =
    typeof content === "string" ? [{ type: "text", text: content }] : ((content ?? []) as InputContent[]);
  const fromModel = message.role === "assistant";
  const items = parts.filter((p) => !fromModel || p.type === "text").map((p) => contentItem(p, fromModel));
  return [
    { ...first, type: "response_item", payload: { type: "message", role: message.role, content: items } },
  ];
}

/** The types of the items a tool's output is written as. */
const OUTPUT_TYPES = new Set(["function_call_output", "custom_tool_call_output"]);

/** An entry's lines as they go out: filled from its message, or as an edit on the branch leaves it. */
function entryLines(
  message: AgentMessage,
  lines: readonly Line[],
  edit: Pick<ContextEditEntry, "replacement"> | undefined,
): Line[] {
  return edit ? editedLines(applyContextEdit([message], edit)[0], lines) : messageLines(message, lines);
}

/** The payloads of the lines an entry read from inside a compacted line holds. */
function replacementItems(entry: SessionEntry, edits: BranchEdits): unknown[] {
  const custom = customLine(entry, PREFIX);
  if (custom) return [custom.line.payload];
  const kept = (entry as SourceFields).sourceLines;
  const message = messageOf(entry);
  if (!message || !Array.isArray(kept)) return [];
  return entryLines(message, kept.filter(isRecord), edits.get(entry.id)).map((line) => line.payload);
}

/** A compacted line: its summary, and its replacement history from the entries read from it. */
function compactedLine(
  entry: CompactionEntry,
  line: Line,
  members: readonly SessionEntry[],
  edits: BranchEdits,
): Line {
  const payload = isRecord(line.payload) ? { ...line.payload } : {};
  if (!Object.hasOwn(payload, "message")) payload.message = entry.summary;
  if (Array.isArray(payload.replacement_history)) {
    const items = members.flatMap((member) => replacementItems(member, edits));
    let next = 0;
    payload.replacement_history = payload.replacement_history.flatMap((item) =>
      isHole(item) ? (next < items.length ? [items[next++]] : []) : [item],
    );
  }
  return { ...line, payload };
}

/** A compaction and the entries read from inside its line (its replacement history). */
interface CompactedGroup {
  entry: CompactionEntry;
  line: Line;
  number: number;
  at: number;
  members: SessionEntry[];
}

/**
 * The rollout's own lines as they go out: the `session_meta` of the thread the session was imported
 * as under the export's thread id (a fork's lines carry its source's), the first one holding the
 * export's record when it makes one (another's stays, as imported: the ids the session's entries
 * were read under depend on it), and the name they give the thread, read as the import reads it.
 */
class OwnLines {
  readonly #from: string | undefined;
  readonly #to: string;
  #record: ExportRecord | undefined;
  #name: string | undefined;

  constructor(from: string | undefined, to: string, record: ExportRecord | undefined) {
    this.#from = from;
    this.#to = to;
    this.#record = record;
  }

  readonly out = (line: Line): Line => {
    const payload = isRecord(line.payload) ? line.payload : undefined;
    if (line.type === "event_msg" && payload?.type === "thread_name_updated")
      this.#name = asString(payload.thread_name)?.trim() || this.#name;
    if (line.type !== "session_meta" || !payload) return line;
    const meta = { ...payload };
    if (meta.id === this.#from && this.#from !== this.#to) meta.id = this.#to;
    if (this.#record !== undefined) meta[EXPORT_RECORD] = this.#record;
    this.#record = undefined;
    return { ...line, payload: meta };
  };

  get name(): string | undefined {
    return this.#name;
  }
}

/**
 * The rollout's own lines, from every entry on the current branch made from one, in the order the
 * file had them, the entries the branch's context edits name as the edits leave them. Codex reads
 * a rollout as one straight conversation: the lines of a branch the head left stay out.
 */
async function* sourceLines(
  session: Session,
  imported: boolean,
  held: HeldEntries,
  onBranch: ReadonlySet<string>,
  own: OwnLines,
  edits: BranchEdits,
): AsyncGenerator<PlacedLine> {
  if (!held.hasLines) return;
  const order = new LineOrder(own.out);
  let group: CompactedGroup | undefined;
  const close = function* (): Generator<PlacedLine> {
    if (group)
      yield* order.put(compactedLine(group.entry, group.line, group.members, edits), group.at, group.number);
    group = undefined;
  };
  for await (const entry of sessionEntries(session)) {
    if (entry.type === "leaf" || !onBranch.has(entry.id)) continue;
    if (group && entry.id.startsWith(`${group.entry.id}:`)) {
      group.members.push(entry);
      continue;
    }
    yield* close();
    const at = held.at(entry.id);
    const custom = customLine(entry, PREFIX);
    if (custom) {
      yield* order.put(custom.line, at, custom.number);
      continue;
    }
    const source = imported ? sourceOf(entry as SourceFields) : undefined;
    const [first, ...rest] = source ?? [];
    if (!first) continue;
    if (entry.type === "compaction") {
      group = { entry, line: first.line, number: first.number, at, members: [] };
      continue;
    }
    const message = messageOf(entry);
    const edit = edits.get(entry.id);
    const lines = message
      ? entryLines(
          message,
          (source ?? []).map((s) => s.line),
          edit,
        )
      : [first.line];
    // An edit may leave fewer lines than the entry had: those after them are left out.
    if (lines[0]) yield* order.put(lines[0], at, first.number);
    rest.forEach((s, index) => {
      const line = edit ? lines[index + 1] : (lines[index + 1] ?? s.line);
      if (line) order.later(line, at, s.number);
    });
  }
  yield* close();
  yield* order.rest();
}

/**
 * The event a reply that did not finish is followed by, as Codex records the turn: a stopped reply
 * ends its turn aborted, a failed one with the error.
 */
function stopEvents(reply: AssistantMessage): Line[] {
  if (reply.stopReason === "aborted") return [{ type: "turn_aborted", reason: "interrupted" }];
  if (reply.stopReason === "error") return [{ type: "error", message: reply.errorMessage ?? "" }];
  return [];
}

/**
 * The events Codex shows a reply's words by in a resumed thread (it builds what it shows from
 * events, not from response items): an `agent_message` for each of the reply's message items, when
 * the reply finished.
 */
function answerEvents(reply: AssistantMessage, items: readonly Line[]): Line[] {
  if (reply.stopReason === "aborted" || reply.stopReason === "error") return [];
  return items
    .filter((item) => item.type === "message")
    .map((item) => ({
      type: "agent_message",
      message: (item.content as Line[]).map((part) => part.text).join(""),
    }));
}

/** What makes the lines of messages Codex has no line of. */
class RolloutWriter {
  readonly #callIds = new AnsweredCallIds(OPENAI_RESPONSES_IDS);

  /** A result's wire id: the id of the call it answers, or one of its own when no call waits for it. */
  #answer(storedId: string): string {
    return this.#callIds.result(storedId) ?? this.#callIds.allocate(storedId);
  }

  /** The response items a message is written as, and the events Codex records with them. */
  items(message: AgentMessage): { items: Line[]; events: Line[] } {
    if (message.role === "assistant") {
      const reply = message as AssistantMessage;
      const items = this.#assistant(reply);
      return { items, events: [...answerEvents(reply, items), ...stopEvents(reply)] };
    }
    if (message.role === "toolResult") {
      const result = message as ToolResultMessage;
      const { details: _details, ...bare } = result;
      const output = toolOutput(bare);
      return {
        items: [{ type: "function_call_output", call_id: this.#answer(result.toolCallId), output }],
        events: [],
      };
    }
    const user = toModelMessage(message);
    if (user?.role !== "user") return { items: [], events: [] };
    const content = (user as { content: unknown }).content;
    const parts: InputContent[] =
      typeof content === "string" ? [{ type: "text", text: content }] : ((content ?? []) as InputContent[]);
    const item = { type: "message", role: "user", content: parts.map((p) => contentItem(p, false)) };
    if (message.role !== "user") return { items: [item], events: [] };
    const text = parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
    const images = parts.flatMap((p) => (p.type === "image" ? [contentItem(p, false).image_url] : []));
    const event = { type: "user_message", message: text, images, local_images: [], text_elements: [] };
    return { items: [item], events: [event] };
  }

  #assistant(message: AssistantMessage): Line[] {
    const items: Line[] = [];
    let text: Line | undefined;
    const say = (words: string) => {
      if (!text) {
        text = { type: "message", role: "assistant", content: [] };
        items.push(text);
      }
      (text.content as Line[]).push({ type: "output_text", text: words });
    };
    for (const part of message.content) {
      if (part.type === "text") {
        if (part.text) say(part.text);
        continue;
      }
      text = undefined;
      if (part.type === "toolCall") {
        items.push({
          type: "function_call",
          name: part.name,
          arguments: JSON.stringify(part.arguments),
          call_id: this.#callIds.allocate(part.id),
        });
        continue;
      }
      // Reasoning an OpenAI model wrote goes back as its own item; other readable thinking as text.
      const item = part.thinkingSignature ? tryParseJson(part.thinkingSignature) : undefined;
      if (isRecord(item) && item.type === "reasoning") items.push(item);
      else if (part.redacted !== true && part.thinking.trim()) say(part.thinking);
    }
    return items;
  }
}

/** What the session recorded of where it ran, as Codex records it. */
async function recorded(session: Session, options: CodexExportOptions) {
  const header = await session.getHeader();
  const metadata = header.metadata;
  const field = (key: string) => (isRecord(metadata[key]) ? (metadata[key] as Line) : {});
  const codex = field("codex");
  const claudeCode = field("claudeCode");
  const fromId = /^codex-([0-9a-f-]{36})$/i.exec(header.id)?.[1];
  const importedId = asString(codex.id);
  // A fork holds its source's id: it goes out under one of its own. A session imported under an
  // id of the caller's choosing keeps the file's.
  const own =
    importedId !== undefined && (header.parentSession === undefined || header.id === `codex-${importedId}`);
  const threadId =
    options.threadId ?? (own ? importedId : isUuid(fromId) ? fromId : await uuidFor(header.id));
  const cwd =
    options.cwd ?? asString(codex.cwd) ?? asString(field("pi").cwd) ?? asString(claudeCode.cwd) ?? "";
  const branch = asString(claudeCode.gitBranch);
  const git = isRecord(codex.git) ? codex.git : branch === undefined ? undefined : { branch };
  return { header, threadId, importedId, cwd, git };
}

/**
 * Lines for the conversation on the branch where no line of the rollout holds it, each placed
 * where its entry stands (what a compaction kept, where the compaction does), after the session's
 * `session_meta` when no line of a rollout holds the session (one with no entries yet too).
 */
async function* newLines(
  session: Session,
  leafId: string | null,
  held: HeldEntries,
  where: Awaited<ReturnType<typeof recorded>>,
  record: ExportRecord | undefined,
): AsyncGenerator<PlacedLine> {
  if (held.hasLines && held.path(leafId).every((id) => held.held(id))) return;
  const path = (await session.getBranch(leafId)) as TreeEntry[];
  const { header, threadId, cwd, git } = where;
  let at = Number.NEGATIVE_INFINITY;
  const line = (timestamp: string, type: string, payload: Line) => ({
    at,
    text: `${JSON.stringify({ timestamp, type, payload })}\n`,
  });
  const model = deriveState(path).model;
  if (!held.hasLines) {
    yield line(header.createdAt, "session_meta", {
      id: threadId,
      timestamp: header.createdAt,
      cwd,
      originator: "cf-sessions",
      cli_version: CODEX_VERSION,
      source: "cli",
      model_provider: model?.provider ?? "openai",
      ...(header.systemPrompt ? { base_instructions: { text: header.systemPrompt } } : {}),
      ...(git === undefined ? {} : { git }),
      ...(record === undefined ? {} : { [EXPORT_RECORD]: record }),
    });
  }
  const writer = new RolloutWriter();
  let turnContext = false;
  let keptOnLines = false;
  const written = conversation(path);
  for (let index = 0; index < written.length; index++) {
    const { entry, messages, kept } = written[index] as Written;
    at = Math.max(at, held.at(entry.id));
    // What a compaction from the rollout kept is on the rollout's own lines already.
    if (entry.type === "compaction") keptOnLines = held.held(entry.id);
    if (kept ? keptOnLines : held.held(entry.id)) continue;
    if (!turnContext && model) {
      turnContext = true;
      yield line(entry.timestamp, "turn_context", {
        cwd,
        approval_policy: "on-request",
        sandbox_policy: { type: "read-only" },
        model: model.modelId,
        summary: "auto",
      });
    }
    if (entry.type === "compaction" && messages.some((m) => m.role === "compactionSummary")) {
      // What Codex continues from: the summary as a user message, then what the compaction kept.
      const history: unknown[] = writer.items(
        messages.find((m) => m.role === "compactionSummary") as AgentMessage,
      ).items;
      while ((written[index + 1] as Written | undefined)?.kept) {
        const next = written[++index] as Written;
        for (const message of next.messages) history.push(...writer.items(message).items);
      }
      yield line(entry.timestamp, "compacted", { message: entry.summary, replacement_history: history });
      continue;
    }
    for (const message of messages) {
      const { items, events } = writer.items(message);
      const time = lineTime(message, entry);
      for (const item of items) yield line(time, "response_item", item);
      for (const event of events) yield line(time, "event_msg", event);
    }
  }
}

/**
 * A session as a Codex CLI rollout, line by line (each ending in a newline): the lines it was
 * imported from as they were, and lines for what was written elsewhere on the current branch, each
 * where its entry stands in the session.
 */
export async function* exportCodex(
  session: Session,
  options: CodexExportOptions = {},
): AsyncGenerator<string> {
  yield* exportCodexAs(session, undefined, options);
}

/** Entries no line of a rollout stands for where they are: a label, a name (written at the end). */
const LINELESS = new Set(["label", "session_info"]);

/**
 * The session as a Codex CLI rollout, as `exportCodex` writes it now, or as the export whose record
 * is `made` wrote it: at its head, with its record (the branch up to a head never changes).
 */
export async function* exportCodexAs(
  session: Session,
  made: ExportRecord | undefined,
  options: CodexExportOptions = {},
): AsyncGenerator<string> {
  const [leafId, nameNow, where] = await Promise.all([
    made ? made.head : session.getLeafId(),
    session.getName(),
    recorded(session, options),
  ]);
  // Only a session imported from a rollout has Codex's lines beside its entries (another agent's
  // import keeps its own there).
  const imported = isRecord(where.header.metadata.codex);
  const held = new HeldEntries();
  let underHead = false;
  let seq = 0;
  // The name as the entries read so far give it (`session_info`), once one does.
  let named: { name?: string } | undefined;
  for await (const { seq: at, ...stored } of session.allEntries()) {
    // A recorded export is read as it was made: of the entries there were then.
    if (made && at > made.seq) break;
    seq = at;
    const entry = stored as SessionEntry;
    if (entry.type === "leaf") continue;
    if (entry.type === "session_info") named = { name: nonBlank(entry.name) };
    // What the head has under it that the export writes a line for (a label, a name, none).
    underHead ||= leafId !== null && entry.parentId === leafId && !LINELESS.has(entry.type);
    const holds =
      customLine(entry, PREFIX) !== undefined || (imported && sourceOf(entry as SourceFields) !== undefined);
    held.read(entry, holds ? [entry.id] : undefined);
  }
  held.finish();
  const name = made ? (named ? named.name : nonBlank(where.header.name)) : nameNow;
  const path = held.path(leafId);
  const branch = new Set(path);
  const record =
    made ??
    (leafId === null || !(underHead || !path.every((id) => held.held(id)))
      ? undefined
      : { session: session.id, head: leafId, seq });
  const own = new OwnLines(where.importedId, where.threadId, record);
  // Edits on the branch change the lines of the entries they name, as the context does.
  const edits = held.hasLines ? latestEdits(await session.getBranch(leafId)) : new Map();
  yield* inSessionOrder(
    sourceLines(session, imported, held, branch, own, edits),
    newLines(session, leafId, held, where, record),
  );
  // The lines written may not give the session's name: a fork's is its own, and lines the head
  // left behind may hold the rename that named the session.
  if (name !== undefined && (!held.hasLines || held.namedHere || name !== own.name)) {
    const payload = { type: "thread_name_updated", thread_id: where.threadId, thread_name: name };
    yield `${JSON.stringify({ timestamp: where.header.createdAt, type: "event_msg", payload })}\n`;
  }
}
