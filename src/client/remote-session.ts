import type { CompactOptions, NavigateOptions, NavigateResult } from "../core/compact-session";
import type { SessionContext } from "../core/context";
import type { CompactionEntry, StoredEntry } from "../core/entries";
import type { SessionEvent } from "../core/events";
import type { GenerationInfo, GenerationState } from "../core/generations/generation-schemas";
import type { ExportFormat } from "../core/interchange";
import type { ContextRequests } from "../core/providers/convert";
import type { ContextFormat } from "../core/providers/target";
import type { SessionSearchOptions, SessionSearchPage } from "../core/search";
import type { ContextInOptions, ContextOptions } from "../core/session";
import { Session } from "../core/session";
import type { SessionStorage } from "../core/storage";
import type {
  FollowOptions,
  GenerateOptions,
  GenerationChunk,
  GenerationResult,
  GenerationWriter,
} from "./generations";
import type { RemoteStorage } from "./remote-storage";
import type { WatchOptions } from "./watch";

/*
 * A session on the service as the same `Session` the other backends give: what it asks the
 * service to do in one request (contexts, by delta; compactions and navigations, with the
 * service's summarizer), and the service's own calls (events, generations, search, export).
 */

/** Contexts a session keeps to ask for deltas. */
const KEPT_CONTEXTS = 4;

/**
 * A session on the service. Contexts, compactions and navigations run on the service (one request
 * each, with its summarizer) unless the caller brings its own projectors, transforms or
 * summarizer, which only run here.
 */
export class RemoteSession extends Session {
  declare readonly storage: RemoteStorage;
  /** The last context read per leaf ("" for the head), with its version. */
  readonly #known = new Map<string, { version: string; context: SessionContext }>();

  constructor(storage: RemoteStorage) {
    super(storage);
  }

  /**
   * The context, from the service. The last one read for each leaf is kept, and the next read
   * asks only for what was appended since (`?since=`), so an agent turn moves the new messages,
   * not the history.
   */
  override async buildContext(options: ContextOptions = {}): Promise<SessionContext> {
    if (options.entryProjectors || options.transforms) return super.buildContext(options);
    const key = options.leafId === undefined ? "" : String(options.leafId);
    const known = this.#known.get(key);
    const answer = await this.storage.context(options.leafId, known?.version);
    let context: SessionContext;
    if ("append" in answer) {
      const { version: _version, since, append, ...settings } = answer;
      if (!known || since !== known.version) return this.#reread(key, options);
      context = { ...settings, messages: [...known.context.messages, ...append] };
    } else {
      const { version: _version, reset: _reset, ...whole } = answer;
      context = whole;
    }
    this.#remember(key, answer.version, context);
    // The caller's own copy: changing it (adding cache hints, trimming) never reaches what the
    // next delta builds on.
    const copy = structuredClone(context);
    return options.systemPrompt === undefined ? copy : { ...copy, systemPrompt: options.systemPrompt };
  }

  /** A delta that does not fit what is kept: forget it and read the whole context. */
  #reread(key: string, options: ContextOptions): Promise<SessionContext> {
    this.#known.delete(key);
    return this.buildContext(options);
  }

  #remember(key: string, version: string, context: SessionContext): void {
    if (!version) return;
    this.#known.delete(key);
    this.#known.set(key, { version, context });
    // A few leaves at most: an agent reads the head, a viewer the entries it shows.
    if (this.#known.size > KEPT_CONTEXTS) this.#known.delete(this.#known.keys().next().value as string);
  }

  /** The session's events as they happen: replay after `after`, then live, reconnecting as needed. */
  watch(options: WatchOptions = {}): AsyncGenerator<SessionEvent> {
    return this.storage.watch(options);
  }

  /**
   * Opens a generation (under `parentId`, default the leaf) and answers its writer: append the
   * answer's chunks as the model writes them, then complete (or stop) it. Readers elsewhere follow
   * it meanwhile (`follow`); the session's events announce it.
   */
  generate(options: GenerateOptions = {}): Promise<GenerationWriter> {
    return this.storage.generate(options);
  }

  /** A generation: its state, its stream's tail, the entries it became. */
  generation(id: string): Promise<GenerationInfo> {
    return this.storage.generation(id);
  }

  /**
   * The session's generations: open ones, and ended ones within their retention window, oldest
   * first; with `state`, only those in it (`{ state: "open" }`: the answers being written).
   */
  generations(options: { state?: GenerationState } = {}): Promise<GenerationInfo[]> {
    return this.storage.generations(options);
  }

  /** Stops a generation someone else is writing: what it wrote becomes the entry, aborted. */
  stopGeneration(id: string): Promise<GenerationResult> {
    return this.storage.stopGeneration(id);
  }

  /**
   * A generation's chunks from `offset` on (default the start), live, until it is completed or
   * stopped; each chunk carries the offset to resume from, after a reload or on another device.
   */
  follow(generation: string | GenerationInfo, options: FollowOptions = {}): AsyncGenerator<GenerationChunk> {
    return this.storage.follow(generation, options);
  }

  /** The context in a model API's request shape, built by the service. */
  override contextIn<F extends ContextFormat>(
    format: F,
    options: ContextInOptions = {},
  ): Promise<ContextRequests[F]> {
    return this.storage.contextIn(format, options);
  }

  override compact(options: CompactOptions = {}): Promise<StoredEntry<CompactionEntry>> {
    const { summarizer, ...rest } = options;
    return summarizer ? super.compact(options) : this.storage.compact(rest);
  }

  override navigate(targetId: string | null, options: NavigateOptions = {}): Promise<NavigateResult> {
    const { summarizer, ...rest } = options;
    return summarizer ? super.navigate(targetId, options) : this.storage.navigate(targetId, rest);
  }

  /** The session as NDJSON lines (see `RemoteStorage.exportLines`). */
  exportLines(
    format: ExportFormat = "native",
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<string> {
    return this.storage.exportLines(format, options);
  }

  /** The entries matching a query: `q` in the search syntax, newest first or by rank, paged. */
  search(q: string, options: Omit<SessionSearchOptions, "q"> = {}): Promise<SessionSearchPage> {
    return this.storage.search({ q, ...options });
  }

  protected override sibling(storage: SessionStorage): Session {
    return new RemoteSession(storage as RemoteStorage);
  }
}
