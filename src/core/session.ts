import type { CompactOptions, NavigateOptions, NavigateResult } from "./compact-session";
import { compactSession, navigateSession } from "./compact-session";
import type { BuildContextOptions, ModelRef, SessionContext } from "./context";
import { buildSessionContext } from "./context";
import type {
  CompactionEntry,
  ContextEditEntry,
  CustomMessageEntry,
  EntryInput,
  EntryType,
  LeafEntry,
  MessageEntry,
  StoredEntry,
  TreeEntry,
} from "./entries";
import { newId } from "./ids";
import type { AgentMessage, SummaryUsage, ThinkingLevel, Usage } from "./messages";
import type { ContextRequests } from "./providers/convert";
import { contextForModel } from "./providers/convert";
import type { AppendEntryInput, ProviderMessageEntryInput } from "./providers/entry-input";
import type { ContextFormat, MessageFormat } from "./providers/target";
import { modelRefString } from "./providers/target";
import type { EntryQuery, ForkOptions, HeaderPatch, SessionHeader, SessionInfo } from "./session-schemas";
import type { AppendOptions, AppendResult, LeafOptions, SessionStorage } from "./storage";
import type { TreeNode } from "./tree";

/** Where a new entry goes and what it is called; everything is optional. */
export interface EntryOptions extends AppendOptions {
  id?: string;
  /** Defaults to the current leaf; an older entry starts a branch. */
  parentId?: string | null;
  timestamp?: string;
}

export interface CompactionFields {
  summary: string;
  tokensBefore: number;
  firstKeptEntryId?: string;
  retainedTail?: AgentMessage[];
  details?: CompactionEntry["details"];
  usage?: SummaryUsage;
  fromHook?: boolean;
}

export interface BranchSummaryFields {
  summary: string;
  fromId: string;
  details?: unknown;
  usage?: SummaryUsage;
  fromHook?: boolean;
}

export interface CustomMessageFields {
  customType: string;
  content: CustomMessageEntry["content"];
  display: boolean;
  details?: unknown;
}

export interface ContextOptions extends BuildContextOptions {
  /** Build for this leaf instead of the current one (`null`: no messages). */
  leafId?: string | null;
}

export interface ContextInOptions {
  /** Build for this leaf instead of the current one (`null`: no messages). */
  leafId?: string | null | undefined;
  /** The model the request is for; default: the session's model (its last model change or reply). */
  model?: ModelRef | undefined;
  /** Whether the model reads images (default true); without it, images become a short note. */
  imageInput?: boolean | undefined;
}

export interface ProviderMessageOptions extends EntryOptions {
  /** Who answered; default: the session's model (its last model change or reply that names its model). */
  model?: ModelRef | undefined;
}

/**
 * The entry that appends a model API's own message with these options (`expectedLeafId` aside).
 * Its id is chosen here, before the first try, so a retry is a replay.
 */
export function providerMessageInput(
  format: MessageFormat,
  message: unknown,
  options: ProviderMessageOptions,
): ProviderMessageEntryInput {
  const { expectedLeafId: _expected, model, ...placement } = options;
  return {
    type: "message",
    format,
    message,
    ...placement,
    id: placement.id ?? newId(),
    ...(model ? { model: modelRefString(model) } : {}),
  };
}

/** A session: the tree of entries over a storage, with the operations agents use. */
export class Session {
  constructor(readonly storage: SessionStorage) {}

  get id(): string {
    return this.storage.id;
  }

  getInfo(): Promise<SessionInfo> {
    return this.storage.getInfo();
  }

  getHeader(): Promise<SessionHeader> {
    return this.storage.getHeader();
  }

  async getMetadata(): Promise<Record<string, unknown>> {
    return (await this.storage.getInfo()).metadata;
  }

  updateHeader(patch: HeaderPatch): Promise<SessionHeader> {
    return this.storage.updateHeader(patch);
  }

  getLeafId(): Promise<string | null> {
    return this.storage.getLeafId();
  }

  /** Moves the head (durably, with a `leaf` record). */
  setLeafId(targetId: string | null, options?: LeafOptions): Promise<StoredEntry<LeafEntry>> {
    return this.storage.setLeafId(targetId, options);
  }

  getEntry(id: string): Promise<StoredEntry | undefined> {
    return this.storage.getEntry(id);
  }

  getEntries(query?: EntryQuery): Promise<StoredEntry[]> {
    return this.storage.getEntries(query);
  }

  /** Every entry in append order, read page by page. */
  async *allEntries(query: Omit<EntryQuery, "after"> = {}): AsyncGenerator<StoredEntry> {
    const limit = query.limit ?? 1000;
    let after: number | undefined;
    for (;;) {
      let count = 0;
      let last: StoredEntry | undefined;
      for await (const page of await this.#pages({ ...query, after, limit })) {
        yield* page;
        count += page.length;
        last = page[page.length - 1] ?? last;
      }
      if (!last || count < limit) return;
      after = last.seq;
    }
  }

  /** Entries of a query in the storage's own bounded pages where it has them, else at once. */
  async #pages(query: EntryQuery): Promise<AsyncIterable<StoredEntry[]> | StoredEntry[][]> {
    return this.storage.entryPages ? this.storage.entryPages(query) : [await this.storage.getEntries(query)];
  }

  getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return this.storage.getBranch(leafId);
  }

  getTree(): Promise<TreeNode[]> {
    return this.storage.getTree();
  }

  async getLabel(id: string): Promise<string | undefined> {
    const labels = await this.storage.getLabels();
    return Object.hasOwn(labels, id) ? labels[id] : undefined;
  }

  async getName(): Promise<string | undefined> {
    return (await this.storage.getInfo()).name;
  }

  /**
   * The context to send to a model from a leaf (the head by default). Custom `transforms` may look
   * at any entry, so they get the whole branch; otherwise the storage's context path is enough.
   * The session's system prompt is read from its info, which every storage answers in one read.
   */
  async buildContext(options: ContextOptions = {}): Promise<SessionContext> {
    const { leafId, ...buildOptions } = options;
    const [path, info] = await Promise.all([
      options.transforms ? this.storage.getBranch(leafId) : this.storage.getContextPath(leafId),
      this.storage.getInfo(),
    ]);
    return buildSessionContext(path, { ...buildOptions, sessionSystemPrompt: info.systemPrompt });
  }

  /** The context in a model API's request shape, for the session's model unless one is named. */
  async contextIn<F extends ContextFormat>(
    format: F,
    options: ContextInOptions = {},
  ): Promise<ContextRequests[F]> {
    const { leafId, model, imageInput } = options;
    return contextForModel(await this.buildContext({ leafId }), format, { model, imageInput });
  }

  /**
   * Appends a model API's own message (a response, tool results, a user turn) as the messages it
   * stands for, chained: the first under `id`, the ones after it under `<id>:1`, `<id>:2`, ….
   * Tool results take their tool's name from the calls they answer. Resending the same id is a
   * replay, however the session moved since.
   */
  async appendProviderMessage(
    format: MessageFormat,
    message: unknown,
    options: ProviderMessageOptions = {},
  ): Promise<StoredEntry<MessageEntry>[]> {
    const { expectedLeafId } = options;
    const result = await this.storage.appendEntries(
      [providerMessageInput(format, message, options)],
      expectedLeafId === undefined ? {} : { expectedLeafId },
    );
    return result.entries as StoredEntry<MessageEntry>[];
  }

  async appendEntry(entry: EntryInput, options?: AppendOptions): Promise<StoredEntry> {
    return (await this.storage.appendEntries([entry], options)).entries[0] as StoredEntry;
  }

  appendEntries(entries: readonly AppendEntryInput[], options?: AppendOptions): Promise<AppendResult> {
    return this.storage.appendEntries(entries, options);
  }

  private async append<T extends EntryType>(
    type: T,
    fields: Record<string, unknown>,
    options: EntryOptions = {},
  ): Promise<string> {
    const { expectedLeafId, ...placement } = options;
    const entry = { type, ...fields, ...placement } as EntryInput;
    const appendOptions = expectedLeafId === undefined ? {} : { expectedLeafId };
    return (await this.appendEntry(entry, appendOptions)).id;
  }

  appendMessage(message: AgentMessage, options?: EntryOptions): Promise<string> {
    return this.append("message", { message }, options);
  }

  appendModelChange(provider: string, modelId: string, options?: EntryOptions): Promise<string> {
    return this.append("model_change", { provider, modelId }, options);
  }

  appendThinkingLevelChange(thinkingLevel: ThinkingLevel, options?: EntryOptions): Promise<string> {
    return this.append("thinking_level_change", { thinkingLevel }, options);
  }

  appendActiveToolsChange(activeToolNames: string[], options?: EntryOptions): Promise<string> {
    return this.append("active_tools_change", { activeToolNames }, options);
  }

  appendCompaction(fields: CompactionFields, options?: EntryOptions): Promise<string> {
    return this.append("compaction", { ...fields }, options);
  }

  appendBranchSummary(fields: BranchSummaryFields, options?: EntryOptions): Promise<string> {
    return this.append("branch_summary", { ...fields }, options);
  }

  appendCustomEntry(customType: string, data?: unknown, options?: EntryOptions): Promise<string> {
    return this.append("custom", data === undefined ? { customType } : { customType, data }, options);
  }

  appendCustomMessageEntry(fields: CustomMessageFields, options?: EntryOptions): Promise<string> {
    return this.append("custom_message", { ...fields }, options);
  }

  /** Sets (or, with `undefined` or a blank label, clears) the label of an entry. */
  appendLabel(targetId: string, label: string | undefined, options?: EntryOptions): Promise<string> {
    return this.append("label", label === undefined ? { targetId } : { targetId, label }, options);
  }

  appendSessionName(name: string, options?: EntryOptions): Promise<string> {
    return this.append("session_info", { name }, options);
  }

  /** Records tokens spent outside the conversation (a cache warm-up, say); it adds nothing to the context. */
  appendUsage(
    fields: { kind: string; provider: string; model: string; usage: Usage; note?: string },
    options?: EntryOptions,
  ): Promise<string> {
    return this.append("usage", { ...fields }, options);
  }

  /**
   * Changes what an earlier message on the branch contributes to the context from here on: `null`
   * leaves it out, `{content}` replaces its content. The message itself stays as it was.
   */
  appendContextEdit(
    targetId: string,
    replacement: ContextEditEntry["replacement"],
    options?: EntryOptions,
  ): Promise<string> {
    return this.append("context_edit", { targetId, replacement }, options);
  }

  /** Compacts the current branch (see `compactSession`). */
  compact(options: CompactOptions = {}): Promise<StoredEntry<CompactionEntry>> {
    return compactSession(this.storage, options);
  }

  /** Moves the head, optionally summarizing the branch left (see `navigateSession`). */
  navigate(targetId: string | null, options: NavigateOptions = {}): Promise<NavigateResult> {
    return navigateSession(this.storage, targetId, options);
  }

  async fork(targetId: string, options?: ForkOptions): Promise<Session> {
    return this.sibling(await this.storage.fork(targetId, options));
  }

  /** A session of the same kind over another storage (a fork's). */
  protected sibling(storage: SessionStorage): Session {
    return new Session(storage);
  }

  delete(): Promise<void> {
    return this.storage.delete();
  }
}
