import type { UIMessage } from "ai";
import * as z from "zod";
import type { EntryInput, Session, SessionRepo, StoredEntry } from "../../core";
import { newId, SessionError } from "../../core";
import { canonicalJson } from "../../core/internal";
import { keyedId } from "../keys";
import { SessionHandles } from "../session-handles";

/*
 * A chat of the AI SDK's UI (`useChat`) as a session: the chat's messages are the current branch,
 * each `UIMessage` a `custom_message` entry holding it exactly (its text in `content`, for search
 * and the viewer). Saving messages that differ from the stored ones at some point (a regenerated
 * answer, an edited message) appends the new ones under the last message both share: a branch
 * beside the old answer, which the tree keeps.
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
    throw new SessionError("invalid_request", "messages must be UI messages (id, role, parts)", {
      issues: parsed.error.issues,
    });
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

/** The chat on the current branch: each message with the entry that holds it. */
async function storedChat<M extends UIMessage>(session: Session) {
  const branch = await session.getBranch();
  const messages: Array<{ entryId: string; message: M }> = [];
  for (const entry of branch) {
    const message = messageOf<M>(entry);
    if (message) messages.push({ entryId: entry.id, message });
  }
  return { messages, leafId: branch.at(-1)?.id ?? null };
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
      while (
        shared < messages.length &&
        shared < stored.messages.length &&
        canonicalJson(stored.messages[shared]?.message) === canonicalJson(messages[shared])
      ) {
        shared++;
      }
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
