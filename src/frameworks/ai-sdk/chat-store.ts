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
} from "../../core";
import { newId, SessionError } from "../../core";
import { canonicalJson } from "../../core/internal";
import { keyedId } from "../keys";
import { SessionHandles } from "../session-handles";

/*
 * A chat of the AI SDK's UI (`useChat`) as a session: the chat's messages are the current branch,
 * each `UIMessage` a `custom_message` entry holding it exactly (its text in `content`, for search
 * and the viewer). Saving messages that differ from the stored ones at some point (a regenerated
 * answer, an edited message) appends the new ones under the last message both share: a branch
 * beside the old answer, which the tree keeps. An answer written as a generation is the messages
 * it became (an assistant's, tool results): one UIMessage, named by its first entry's id, which
 * is the generation's and the id the UI gave it (see `pipeToGeneration`).
 */

export const UI_MESSAGE = "ai-sdk:ui-message";

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

function messageText(message: UIMessage): string {
  return message.parts
    .map((part) => ("text" in part && typeof part.text === "string" ? part.text : ""))
    .filter((text) => text !== "")
    .join("\n");
}

function messageEntry(message: UIMessage, parentId: string | null): EntryInput {
  return {
    type: "custom_message",
    id: newId(),
    parentId,
    customType: UI_MESSAGE,
    content: messageText(message),
    display: message.role !== "system",
    details: message,
  };
}

/** The message an entry holds, or undefined for any other entry. */
function messageOf<M extends UIMessage>(entry: StoredEntry): M | undefined {
  return entry.type === "custom_message" &&
    entry.customType === UI_MESSAGE &&
    UIMessageShape.safeParse(entry.details).success
    ? (entry.details as M)
    : undefined;
}

/** A message of the chat as stored, with the entry that holds it (the last of them, for an answer). */
interface StoredMessage<M> {
  entryId: string;
  message: M;
  /** An answer kept as the session's own messages: the UI's message of its id is the same answer. */
  answer: boolean;
}

/**
 * An answer's messages (an assistant's and tool results, as a generation writes them) as one
 * UIMessage, as the UI showed it: each model turn a step, tool calls holding their results. A
 * stopped answer shows what it wrote.
 */
function answerMessage<M extends UIMessage>(run: ReadonlyArray<StoredEntry & { message: AgentMessage }>): M {
  const parts: Array<Record<string, unknown>> = [];
  const calls = new Map<string, number>();
  for (const { message } of run) {
    if (message.role === "assistant") {
      parts.push({ type: "step-start" });
      for (const block of (message as AssistantMessage).content) {
        if (block.type === "text") parts.push({ type: "text", text: block.text, state: "done" });
        else if (block.type === "thinking")
          parts.push({ type: "reasoning", text: block.thinking, state: "done" });
        else {
          calls.set(block.id, parts.length);
          parts.push({
            type: `tool-${block.name}`,
            toolCallId: block.id,
            state: "input-available",
            input: block.arguments,
          });
        }
      }
    } else if (message.role === "toolResult") {
      const result = message as ToolResultMessage;
      const at = calls.get(result.toolCallId);
      if (at === undefined) continue;
      const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
      parts[at] = result.isError
        ? { ...parts[at], state: "output-error", errorText: text }
        : { ...parts[at], state: "output-available", output: text };
    }
  }
  return { id: (run[0] as StoredEntry).id, role: "assistant", parts } as unknown as M;
}

/** The chat on the current branch: each message with the entry that holds it. */
async function storedChat<M extends UIMessage>(session: Session) {
  const branch = await session.getBranch();
  const messages: StoredMessage<M>[] = [];
  let run: Array<StoredEntry & { message: AgentMessage }> = [];
  const endRun = () => {
    const last = run.at(-1);
    if (last) messages.push({ entryId: last.id, message: answerMessage<M>(run), answer: true });
    run = [];
  };
  for (const entry of branch) {
    if (
      entry.type === "message" &&
      (entry.message.role === "assistant" || entry.message.role === "toolResult")
    ) {
      run.push(entry);
      continue;
    }
    endRun();
    const message = messageOf<M>(entry);
    if (message) messages.push({ entryId: entry.id, message, answer: false });
  }
  endRun();
  return { messages, leafId: branch.at(-1)?.id ?? null };
}

function sameMessage<M extends UIMessage>(
  stored: StoredMessage<M> | undefined,
  message: M | undefined,
): boolean {
  if (!stored || !message) return false;
  return stored.answer
    ? stored.message.id === message.id
    : canonicalJson(stored.message) === canonicalJson(message);
}

/**
 * Keeps AI SDK chats (`UIMessage[]` by chat id) in sessions: `loadChat` answers what `useChat`
 * and `validateUIMessages` take, `saveChat` writes only what changed (one read and one append),
 * and a regenerated or edited message becomes a sibling branch instead of overwriting the old one.
 */
export class CfSessionsChatStore {
  readonly #handles: SessionHandles;
  readonly #prefix: string;

  constructor(options: CfSessionsChatStoreOptions) {
    this.#handles = new SessionHandles(options.repo);
    this.#prefix = options.sessionPrefix ?? "chat:";
  }

  /** The session id of a chat: the prefix and the chat id, escaped (`encodeKey`) or digested when long. */
  sessionIdFor(chatId: string): Promise<string> {
    return keyedId(this.#prefix, [checkChatId(chatId)]);
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
   * it (same id, same content) are appended under that one. When the stored chat goes on past
   * `messages` (the UI dropped its last messages), the head moves back to where they agree.
   */
  async saveChat<M extends UIMessage>(options: SaveChatOptions<M>): Promise<void> {
    const chatId = checkChatId(options?.chatId);
    const messages = checkMessages<M>(options.messages);
    const id = await this.sessionIdFor(chatId);
    await this.#handles.write({ id, metadata: { aiSdk: { chatId } } }, async (session) => {
      const stored = await storedChat<M>(session);
      let shared = 0;
      // Past the end of either list there is no message to share.
      while (sameMessage(stored.messages[shared], messages[shared])) shared++;
      const under = shared === 0 ? null : (stored.messages[shared - 1]?.entryId ?? null);
      const rest = messages.slice(shared);
      if (rest.length === 0) {
        if (shared < stored.messages.length)
          await session.setLeafId(under, { expectedLeafId: stored.leafId });
        return;
      }
      const entries: EntryInput[] = [];
      let parentId = under;
      for (const message of rest) {
        const entry = messageEntry(message, parentId);
        entries.push(entry);
        parentId = entry.id as string;
      }
      // Written only if no other save moved the chat since it was read.
      await session.appendEntries(entries, { expectedLeafId: stored.leafId });
    });
  }
}
