import type { UIMessage } from "ai";
import * as z from "zod";
import type {
  AgentMessage,
  AssistantMessage,
  EntryInput,
  Session,
  SessionRepo,
  StoredEntry,
  ToolResultMessage,
  TreeEntry,
  UserMessage,
} from "../../core";
import { newId, SessionError } from "../../core";
import { AI_SDK_UI_MESSAGE } from "../../core/framework-custom-messages";
import { checkSessionId } from "../../core/ids";
import { canonicalJson } from "../../core/json";
import { fromAISDKUI } from "../../core/providers/from-ai-sdk-ui";
import { assistantBlocks } from "../../core/providers/normalize";
import { toModelMessage } from "../../core/providers/pi-messages";
import { dataUrl } from "../../core/providers/text";
import type { AISDKUIPart, AISDKUIToolPart, ToolSlots } from "../../core/providers/to-ai-sdk-ui";
import { addStep, settle } from "../../core/providers/to-ai-sdk-ui";
import { AnsweredCallIds, callIdPart, PORTABLE_IDS } from "../../core/providers/tool-call-ids";
import { rewindTo } from "../../core/rewind";
import { conversationPieces, keepOriginal, messageIdOf, pairedPieces } from "../conversation";
import { keyedId } from "../keys";
import { SessionHandles } from "../session-handles";

/*
 * A chat of the AI SDK's UI (`useChat`) as a session: the chat's messages are the current branch,
 * each `UIMessage` the messages it stands for (the user's, an answer's steps with their tool calls
 * and results, reasoning, images), read by the core's reader of UI messages, the `UIMessage` kept
 * exactly on the last entry it became. One that holds nothing a model reads (only data parts) is a
 * `custom` entry holding it, which contexts skip. Saving messages that differ from the stored ones
 * at some point (a regenerated answer, an edited message) appends the new ones under the last
 * message both share: a branch beside the old answer, which the tree keeps. Any other message on
 * the branch (an answer written as a generation, what another door wrote) reads as the UIMessage
 * it stands for, named by its entry's id: an answer's messages (an assistant's, tool results) as
 * one, named by its first entry's id, which is the generation's and the id the UI gave it (see
 * `pipeToGeneration`). A result another door appended for an open call of a stored UI message
 * shows in that call's part: the message goes on from it.
 */

export const UI_MESSAGE = AI_SDK_UI_MESSAGE;
const FRAMEWORK = "ai-sdk";

/** What every `UIMessage` is: an id, a role and parts (anything else it carries is kept as is). */
const UIMessageShape = z.looseObject({
  id: z.string().min(1),
  role: z.enum(["system", "user", "assistant"]),
  parts: z.array(z.looseObject({ type: z.string() })),
});
const UIMessages = z.array(UIMessageShape);

export interface CfSessionsChatStoreOptions {
  /** Where chats are kept: a `RemoteRepo` (the service) or any of the library's repos. */
  repo: SessionRepo;
  /** What the ids of chat sessions start with (default `chat:`). */
  sessionPrefix?: string;
  /**
   * A chat's id is its session's id, as it is (no prefix): any session, whoever wrote it (over
   * HTTP, an import, another framework), opens as a chat and goes on as one.
   */
  chatIdIsSessionId?: boolean;
}

export interface SaveChatOptions<M extends UIMessage> {
  chatId: string;
  /** The chat's messages as the UI has them now (what `onFinish` gives on the server). */
  messages: M[];
}

function checkChatId(chatId: unknown): string {
  if (typeof chatId !== "string" || chatId === "") {
    throw new SessionError("invalid_request", "chatId must be a non-empty string");
  }
  return chatId;
}

function checkMessages<M extends UIMessage>(messages: unknown): M[] {
  const parsed = UIMessages.safeParse(messages);
  if (!parsed.success) {
    const message = "messages must be UI messages (id, role, parts)";
    throw new SessionError("invalid_request", message, { issues: parsed.error.issues });
  }
  return messages as M[];
}

/** The entries a UI message becomes, chained under `parentId`. */
function messageEntries(message: UIMessage, parentId: string | null): EntryInput[] {
  const messages = fromAISDKUI(message);
  const entries: EntryInput[] =
    messages.length === 0
      ? [{ type: "custom", customType: UI_MESSAGE, data: message }]
      : keepOriginal(
          messages.map((read) => ({ type: "message" as const, message: read })),
          FRAMEWORK,
          [message],
        );
  let parent = parentId;
  return entries.map((entry) => {
    const chained = { ...entry, id: newId(), parentId: parent } as EntryInput;
    parent = chained.id as string;
    return chained;
  });
}

/** The UI message an entry holds in a shape of its own: a custom entry, or one of cf-sessions 0.1. */
function ownMessages(entry: StoredEntry<TreeEntry>): unknown[] | undefined {
  if (
    entry.type === "custom" &&
    entry.customType === UI_MESSAGE &&
    UIMessageShape.safeParse(entry.data).success
  )
    return [entry.data];
  if (
    entry.type === "custom_message" &&
    entry.customType === UI_MESSAGE &&
    UIMessageShape.safeParse(entry.details).success
  )
    return [entry.details];
  return undefined;
}

/** A message of the chat as stored, with the entry that holds it (the last of them, for an answer). */
interface StoredMessage<M> {
  entryId: string;
  message: M;
  /** Read from the session's own messages: the UI's message of its id is the same one. */
  byId: boolean;
  /** The last message of the context it stands for, when read from them. */
  endsWith?: AgentMessage;
}

/** A message of an answer, with the id of the UI message it opens. */
interface AnswerPart {
  id: string;
  message: AgentMessage;
}

/**
 * An answer's messages (an assistant's and tool results, as a generation writes them) as one
 * UIMessage, as `format=ai-sdk-ui` shows it: each model turn a step, tool calls holding their
 * results, reasoning with its signatures. A stopped answer shows what it wrote.
 */
function answerMessage<M extends UIMessage>(run: readonly AnswerPart[], ids: AnsweredCallIds): M {
  const parts: AISDKUIPart[] = [];
  const slots: ToolSlots = new Map();
  for (const { message } of run) {
    if (message.role === "assistant") {
      const reply = message as AssistantMessage;
      const content = assistantBlocks(reply, true, ids, "thinking");
      addStep({ role: "assistant", content, sameModel: true, source: reply }, parts, slots);
    } else if (message.role === "toolResult") {
      const { toolCallId, toolName, content, isError } = message as ToolResultMessage;
      const wireId = ids.result(toolCallId);
      if (wireId !== undefined)
        settle({ role: "toolResults", results: [{ toolCallId: wireId, toolName, content, isError }] }, slots);
    }
  }
  return { id: (run[0] as AnswerPart).id, role: "assistant", parts } as unknown as M;
}

/** The states of a tool part whose call waits for its result. */
const OPEN_CALL = new Set(["input-available", "approval-requested", "approval-responded"]);

/**
 * A UI message the store kept, with a result another door appended for one of its open tool calls
 * in that call's part (`output-available`, or `output-error` for an error), as the UI shows a tool's
 * output and as an answer's messages read (`answerMessage`); undefined when no call of it waits for
 * the result.
 */
function withResult<M extends UIMessage>(message: M, result: ToolResultMessage): M | undefined {
  const parts = [...message.parts] as unknown as AISDKUIPart[];
  const slots: ToolSlots = new Map();
  const index = parts.findIndex((part) => {
    const tool = part as Record<string, unknown>;
    return (
      typeof tool.toolCallId === "string" &&
      OPEN_CALL.has(String(tool.state)) &&
      tool.providerExecuted !== true &&
      (tool.toolCallId === result.toolCallId || callIdPart(tool.toolCallId) === result.toolCallId)
    );
  });
  if (index < 0) return undefined;
  const { state: _open, ...call } = parts[index] as AISDKUIToolPart;
  slots.set(result.toolCallId, { parts, index, call });
  const { toolCallId, toolName, content, isError } = result;
  settle({ role: "toolResults", results: [{ toolCallId, toolName, content, isError }] }, slots);
  return { ...message, parts } as M;
}

/** A user or system message of another door as the UI message it stands for, named `id`. */
function otherMessage<M extends UIMessage>(message: AgentMessage, id: string): M | undefined {
  if (message.role === "system") {
    const text = typeof message.content === "string" ? message.content : "";
    return text ? ({ id, role: "system", parts: [{ type: "text", text }] } as unknown as M) : undefined;
  }
  const model = toModelMessage(message);
  if (model?.role !== "user") return undefined;
  const user = model as UserMessage;
  const content =
    typeof user.content === "string" ? [{ type: "text" as const, text: user.content }] : user.content;
  const parts = content.map((part) =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : { type: "file", mediaType: part.mimeType, url: dataUrl(part.mimeType, part.data) },
  );
  return { id, role: "user", parts } as unknown as M;
}

/** The chat a path's context holds: each message with the entry that holds it. */
function chatOf<M extends UIMessage>(path: readonly StoredEntry<TreeEntry>[]) {
  const messages: StoredMessage<M>[] = [];
  // The UI is shown tool calls by ids every provider takes.
  const ids = new AnsweredCallIds(PORTABLE_IDS);
  let run: AnswerPart[] = [];
  let runEnd = "";
  const endRun = () => {
    const endsWith = run.at(-1)?.message;
    if (endsWith)
      messages.push({ entryId: runEnd, message: answerMessage<M>(run, ids), byId: true, endsWith });
    run = [];
  };
  // A call the chat went on from without its result shows as failed, as the model is sent it.
  for (const piece of pairedPieces(conversationPieces(path, FRAMEWORK, ownMessages), false)) {
    const last = piece.entries.at(-1) as StoredEntry<TreeEntry>;
    if (piece.records) {
      endRun();
      for (const record of piece.records)
        messages.push({ entryId: last.id, message: record as M, byId: false });
      continue;
    }
    for (const [index, message] of piece.messages.entries()) {
      // A result for a call of the UI message before it shows in that message, which goes on from it.
      const before = run.length === 0 ? messages.at(-1) : undefined;
      const answered =
        before && message.role === "toolResult"
          ? withResult(before.message, message as ToolResultMessage)
          : undefined;
      if (before && answered) {
        messages[messages.length - 1] = {
          entryId: last.id,
          message: answered,
          byId: true,
          endsWith: message,
        };
        continue;
      }
      if (message.role === "assistant" || message.role === "toolResult") {
        run.push({ id: messageIdOf((piece.entries[0] as StoredEntry).id, index), message });
        runEnd = last.id;
        continue;
      }
      endRun();
      const other = otherMessage<M>(message, messageIdOf(last.id, index));
      if (other) messages.push({ entryId: last.id, message: other, byId: true, endsWith: message });
    }
  }
  endRun();
  return { messages, ids };
}

/**
 * What a compaction keeps of its retained tail when the chat goes on from `through`, one of the
 * messages it shows: the tail up to that message, none from its summary; undefined for a message
 * not of its own (a result added to end a call).
 */
function keptTail(
  branch: readonly StoredEntry<TreeEntry>[],
  through: StoredMessage<unknown>,
): AgentMessage[] | undefined {
  const compaction = branch.find((entry) => entry.id === through.entryId);
  if (compaction?.type !== "compaction" || !through.endsWith) return undefined;
  if (through.endsWith.role === "compactionSummary") return [];
  const tail = compaction.retainedTail ?? [];
  const index = tail.indexOf(through.endsWith);
  return index < 0 ? undefined : tail.slice(0, index + 1);
}

/** The chat on the current branch: each message with the entry that holds it. */
async function storedChat<M extends UIMessage>(session: Session) {
  const branch = await session.getBranch();
  return { ...chatOf<M>(branch), branch, leafId: branch.at(-1)?.id ?? null };
}

/**
 * Every message of a branch as it was written, by id: the chat of the branch with no compaction
 * and no context edit applied.
 */
function writtenChat<M extends UIMessage>(branch: readonly StoredEntry<TreeEntry>[]) {
  const written = branch.filter((entry) => entry.type !== "compaction" && entry.type !== "context_edit");
  return new Map(chatOf<M>(written).messages.map((stored) => [stored.message.id, stored]));
}

/**
 * A UI message without what one copy of an answer may carry and another not: what providers said
 * of its parts (signatures, item ids), and the reason the UI gave for denying a call, which the
 * AI SDK's stream does not carry to the answer's generation. The same answer either way.
 */
function comparable(message: UIMessage): UIMessage {
  const parts = message.parts.map((part) => {
    const {
      providerMetadata: _said,
      callProviderMetadata: _saidOfCall,
      ...rest
    } = part as Record<string, unknown>;
    if (rest.state !== "output-denied" || typeof rest.approval !== "object" || rest.approval === null)
      return rest;
    const { reason: _why, ...approval } = rest.approval as Record<string, unknown>;
    return { ...rest, approval };
  });
  return { ...message, parts } as UIMessage;
}

/**
 * How the UI's message stands to the stored one: undefined when it is another message or changed;
 * else the results it adds for tool calls the stored one left open (the UI ran the tool,
 * `addToolOutput`), none when it is the same. A message read from the session's own messages is
 * the same when it reads as the same messages, whatever provider metadata or denial reasons either
 * copy carries, and also without results the stored one holds (the UI loaded it before they were
 * appended); one the store kept, when it is equal.
 */
function sharedWith<M extends UIMessage>(
  stored: StoredMessage<M> | undefined,
  message: M | undefined,
): ToolResultMessage[] | undefined {
  if (!stored || !message) return undefined;
  if (!stored.byId) return canonicalJson(stored.message) === canonicalJson(message) ? [] : undefined;
  if (stored.message.id !== message.id) return undefined;
  const before = fromAISDKUI(comparable(stored.message), { timestamp: 0 });
  const now = fromAISDKUI(comparable(message), { timestamp: 0 });
  const resultIds = (read: readonly AgentMessage[]) =>
    new Set(
      read.flatMap((one) => (one.role === "toolResult" ? [(one as ToolResultMessage).toolCallId] : [])),
    );
  const answered = resultIds(before);
  const shown = resultIds(now);
  const added = now.filter(
    (read): read is ToolResultMessage =>
      read.role === "toolResult" && !answered.has((read as ToolResultMessage).toolCallId),
  );
  const rest = now.filter((read) => !added.includes(read as ToolResultMessage));
  // Results another door appended after the UI loaded the message: its copy without them is the same.
  const held = before.filter(
    (read) => read.role !== "toolResult" || shown.has((read as ToolResultMessage).toolCallId),
  );
  return canonicalJson(rest) === canonicalJson(held) ? added : undefined;
}

/**
 * Keeps AI SDK chats (`UIMessage[]` by chat id) in sessions: `loadChat` answers what `useChat`
 * and `validateUIMessages` take, `saveChat` writes only what changed (one read and one append),
 * and a regenerated or edited message becomes a sibling branch instead of overwriting the old one.
 */
export class CfSessionsChatStore {
  readonly #handles: SessionHandles;
  readonly #prefix: string;

  readonly #chatIdIsSessionId: boolean;

  constructor(options: CfSessionsChatStoreOptions) {
    this.#handles = new SessionHandles(options.repo);
    this.#prefix = options.sessionPrefix ?? "chat:";
    this.#chatIdIsSessionId = options.chatIdIsSessionId === true;
  }

  /**
   * The session id of a chat: the prefix and the chat id, escaped (`encodeKey`) or digested when
   * long; or the chat id itself (`chatIdIsSessionId`).
   */
  async sessionIdFor(chatId: string): Promise<string> {
    const checked = checkChatId(chatId);
    if (!this.#chatIdIsSessionId) return keyedId(this.#prefix, [checked]);
    try {
      return checkSessionId(checked);
    } catch (error) {
      throw new SessionError("invalid_request", `chatId: ${(error as Error).message}`);
    }
  }

  /** A new chat, empty; its id. */
  async createChat(): Promise<string> {
    const chatId = newId();
    const id = await this.sessionIdFor(chatId);
    await this.#handles.write({ id, metadata: { aiSdk: { chatId } } }, async () => undefined);
    return chatId;
  }

  /** The chat's messages on its current branch; none for a chat never saved. */
  async loadChat<M extends UIMessage = UIMessage>(chatId: string): Promise<M[]> {
    const session = await this.#handles.find(await this.sessionIdFor(chatId));
    if (!session) return [];
    return (await storedChat<M>(session)).messages.map(({ message }) => message);
  }

  /**
   * Saves the chat as the UI has it: the messages after the last one the stored chat shares with
   * it (same id, same content) are appended under that one, a changed message so on a branch
   * beside the stored one. Results the UI added for an answer's open tool calls are appended
   * after it. When the stored chat goes on past `messages` (the UI dropped its last messages), the
   * head moves back to where they agree. Messages a compaction or a context edit took out of the
   * context or changed, which the UI holds as they were written, are stored already.
   */
  async saveChat<M extends UIMessage>(options: SaveChatOptions<M>): Promise<void> {
    const chatId = checkChatId(options?.chatId);
    const messages = checkMessages<M>(options.messages);
    const id = await this.sessionIdFor(chatId);
    await this.#handles.write({ id, metadata: { aiSdk: { chatId } } }, async (session) => {
      const stored = await storedChat<M>(session);
      const written = writtenChat<M>(stored.branch);
      const inContext = new Set(stored.messages.map(({ message }) => message.id));
      const inUI = new Set(messages.map(({ id }) => id));
      const position = new Map(stored.branch.map((entry, index) => [entry.id, index]));
      const compactions = new Set(
        stored.branch.flatMap((entry) => (entry.type === "compaction" ? [entry.id] : [])),
      );
      const later = (a: string | null, b: string) =>
        a !== null && (position.get(a) ?? -1) >= (position.get(b) ?? -1) ? a : b;
      // What the branch holds after the chat's last message (or before its first, in a chat with
      // none yet) stays on it: a model change, a label, a note another door wrote.
      let parentId: string | null = stored.messages.length === 0 ? stored.leafId : null;
      // The stored message the chat goes on from, when it is not the last one.
      let through: StoredMessage<M> | undefined;
      // Results the UI added for the open tool calls of the last message shared.
      let added: ToolResultMessage[] = [];
      // The next stored message, and the next of the UI's.
      let at = 0;
      let shared = 0;
      // Past the end of either list there is no message to share. Once results are added, what
      // follows goes on under them.
      while (added.length === 0) {
        const message = messages[shared];
        const current = stored.messages[at];
        const last = at === stored.messages.length - 1;
        // A message a compaction or a context edit took out of the context (the UI loaded the chat
        // before) is stored already: what follows it goes on after it, never before the head.
        const replaced = message && !inContext.has(message.id) ? written.get(message.id) : undefined;
        if (replaced && sharedWith(replaced, message)?.length === 0) {
          parentId = later(parentId, replaced.entryId);
          through = undefined;
          shared++;
          continue;
        }
        // A compaction's message the UI holds by the name of the compaction it repeats (going back
        // wrote one with the same summary) is the same message when it reads the same.
        const repeated =
          message && current && compactions.has(current.entryId) && !inContext.has(message.id)
            ? { ...message, id: current.message.id }
            : undefined;
        const renamed = repeated && sharedWith(current, repeated) !== undefined ? repeated : message;
        // A compaction's summary, or a message an edit changed, that the UI does not hold: the UI
        // holds what it replaced (unless it holds the messages before it of the same entry).
        if (
          current &&
          renamed === message &&
          current.entryId !== through?.entryId &&
          !written.has(current.message.id) &&
          !inUI.has(current.message.id)
        ) {
          if (last) parentId = stored.leafId;
          through = undefined;
          at++;
          continue;
        }
        // A message an edit changed, held by the UI as it was written, is the same message.
        const results =
          sharedWith(current, renamed) ?? sharedWith(current && written.get(current.message.id), renamed);
        if (results === undefined) break;
        parentId = (last ? stored.leafId : current?.entryId) ?? null;
        through = last ? undefined : current;
        added = results;
        at++;
        shared++;
      }
      const rest = messages.slice(shared);
      // Going back inside what a compaction kept keeps its summary (`rewindTo`).
      const tail = through ? keptTail(stored.branch, through) : undefined;
      const rewind = rewindTo(stored.branch, { entryId: parentId, ...(tail ? { retainedTail: tail } : {}) });
      if (rest.length === 0 && added.length === 0) {
        if (at < stored.messages.length) {
          if (rewind.entries.length > 0)
            await session.appendEntries(rewind.entries, { expectedLeafId: stored.leafId });
          else await session.setLeafId(rewind.parentId, { expectedLeafId: stored.leafId });
        }
        return;
      }
      const entries: EntryInput[] = [...rewind.entries];
      parentId = rewind.parentId;
      for (const result of added) {
        const entry = {
          type: "message",
          id: newId(),
          parentId,
          // The UI answers the call by the id it was shown; the result pairs with the stored call.
          message: { ...result, toolCallId: stored.ids.storedOf(result.toolCallId), timestamp: Date.now() },
        };
        entries.push(entry as EntryInput);
        parentId = entry.id;
      }
      for (const message of rest) {
        const written = messageEntries(message, parentId);
        entries.push(...written);
        parentId = written.at(-1)?.id as string;
      }
      // Written only if no other save moved the chat since it was read.
      await session.appendEntries(entries, { expectedLeafId: stored.leafId });
    });
  }
}
