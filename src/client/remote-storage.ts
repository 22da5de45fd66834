import type { CompactOptions, NavigateOptions, NavigateResult } from "../core/compact-session";
import { buildSessionContext } from "../core/context";
import type { ContextAnswer } from "../core/context-answer";
import type { CompactionEntry, LeafEntry, SessionEntry, StoredEntry, TreeEntry } from "../core/entries";
import { SessionError } from "../core/errors";
import type { SessionEvent } from "../core/events";
import type { GenerationInfo, GenerationPage, GenerationState } from "../core/generations/generation-schemas";
import { MAX_GENERATIONS_PAGE } from "../core/generations/generation-schemas";
import { checkForkRequest, checkHeaderPatch } from "../core/given-input";
import { checkSessionId, isValidId, newId } from "../core/ids";
import type { ExportFormat } from "../core/interchange";
import { leafTag } from "../core/leaf-tag";
import { entryPage } from "../core/paging";
import { type ContextRequests, contextForModel } from "../core/providers/convert";
import type { AppendEntryInput } from "../core/providers/entry-input";
import { type ContextFormat, modelRefString } from "../core/providers/target";
import type { SessionSearchOptions, SessionSearchPage } from "../core/search";
import type { ContextInOptions } from "../core/session";
import type {
  EntryQuery,
  ForkOptions,
  HeaderPatch,
  LeafAt,
  SessionHeader,
  SessionInfo,
} from "../core/session-schemas";
import type { AppendOptions, AppendResult, LeafOptions, SessionStorage } from "../core/storage";
import { type TreeNode, walkTree } from "../core/tree";
import type { FollowOptions, GenerateOptions, GenerationChunk, GenerationResult } from "./generations";
import { followGeneration, GenerationWriter, generationPath, stopGeneration } from "./generations";
import { responseLines } from "./response-lines";
import { serviceJson, type Transport } from "./transport";
import type { WatchOptions } from "./watch";
import { watchStream } from "./watch";

/*
 * One session on the service, call by call: each `SessionStorage` call one request to the
 * session's routes (`v1/sessions/:sid/...`). Appends carry their entries' ids from the first try,
 * so a retry is a replay; a leaf the caller expects travels as `If-Match`.
 */

function ifMatch(expected: string | null | undefined): Record<string, string> {
  return expected === undefined ? {} : { "If-Match": leafTag(expected) };
}

/** The path of a session's routes; an id that cannot name a session is refused before any request. */
export function sessionPath(id: string, rest = ""): string {
  return `v1/sessions/${checkSessionId(id)}${rest}`;
}

/** Entries get their ids here, before the first try: a retry of the same request is then a replay. */
function withIds(entries: readonly AppendEntryInput[]): AppendEntryInput[] {
  return entries.map((entry) => (entry.id === undefined ? { ...entry, id: newId() } : entry));
}

type ServiceCompactOptions = Omit<CompactOptions, "summarizer">;
type ServiceNavigateOptions = Omit<NavigateOptions, "summarizer">;

/** A session kept by the service: the `SessionStorage` interface over its HTTP API. */
export class RemoteStorage implements SessionStorage {
  readonly id: string;
  readonly #http: Transport;

  constructor(http: Transport, id: string) {
    this.#http = http;
    this.id = id;
  }

  #path(rest = ""): string {
    return sessionPath(this.id, rest);
  }

  /**
   * The header's own name, as every backend's header has it: the one the session was created,
   * imported or forked with (the info's name is a later `session_info` entry's, once there is one).
   * The first line of the session's native export carries it.
   */
  async #headerName(): Promise<string | undefined> {
    for await (const line of this.exportLines("native")) {
      const { name } = serviceJson(line, "the service sent an export header that is not JSON") as {
        name?: unknown;
      };
      return typeof name === "string" ? name : undefined;
    }
    throw new SessionError("internal", "the service sent an export without a header line");
  }

  async getHeader(): Promise<SessionHeader> {
    const [info, name] = await Promise.all([this.getInfo(), this.#headerName()]);
    const header: SessionHeader = { id: info.id, createdAt: info.createdAt, metadata: info.metadata };
    if (name !== undefined) header.name = name;
    if (info.systemPrompt !== undefined) header.systemPrompt = info.systemPrompt;
    if (info.parentSession) header.parentSession = info.parentSession;
    if (info.expiresAt !== undefined) header.expiresAt = info.expiresAt;
    if (info.autoCompact) {
      const { status: _status, ...settings } = info.autoCompact;
      header.autoCompact = settings;
    }
    return header;
  }

  async updateHeader(patch: HeaderPatch): Promise<SessionHeader> {
    // The service's PATCH also takes a name (it appends a `session_info`): a header change does not.
    await this.#http.json("PATCH", this.#path(), { body: checkHeaderPatch(patch), idempotent: true });
    return this.getHeader();
  }

  getInfo(): Promise<SessionInfo> {
    return this.#http.json("GET", this.#path());
  }

  async getLeafId(): Promise<string | null> {
    return (await this.getInfo()).leafId;
  }

  async setLeafId(targetId: string | null, options: LeafOptions = {}): Promise<StoredEntry<LeafEntry>> {
    const result = await this.#http.json<NavigateResult>("PUT", this.#path("/leaf"), {
      body: { targetId, ...(options.position ? { position: options.position } : {}) },
      headers: ifMatch(options.expectedLeafId),
    });
    if (!result.record) throw new SessionError("internal", "the service did not return the leaf record");
    return result.record;
  }

  async getEntry(id: string): Promise<StoredEntry | undefined> {
    // No entry has such an id, and a URL would resolve `.` and `..` to another route.
    if (!isValidId(id)) return undefined;
    try {
      return await this.#http.json<StoredEntry>("GET", this.#path(`/entries/${encodeURIComponent(id)}`));
    } catch (error) {
      // The entry is missing (the session itself is there): not an error, as in every storage.
      if (!(error instanceof SessionError)) throw error;
      const details = error.details as { entryId?: string } | undefined;
      if (error.code === "not_found" && details?.entryId === id) return undefined;
      throw error;
    }
  }

  async getEntries(query: EntryQuery = {}): Promise<StoredEntry[]> {
    const { after, limit, types } = entryPage(query);
    const page = await this.#http.json<{ entries: StoredEntry[] }>("GET", this.#path("/entries"), {
      query: { after, limit, type: types ? [...types].join(",") : undefined },
    });
    return page.entries;
  }

  async getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    if (leafId === null) {
      await this.getInfo();
      return [];
    }
    const path = this.#path("/branch");
    return (await this.#http.json<{ entries: StoredEntry<TreeEntry>[] }>("GET", path, { query: { leafId } }))
      .entries;
  }

  /** The whole branch: the service builds pruned contexts itself (`RemoteSession.buildContext`). */
  getContextPath(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return this.getBranch(leafId);
  }

  async getTree(): Promise<TreeNode[]> {
    return (await this.#http.json<{ roots: TreeNode[] }>("GET", this.#path("/tree"))).roots;
  }

  async getLabels(): Promise<Record<string, string>> {
    // Entries, not assignments: an entry may be named `__proto__`.
    const labelled = [...walkTree(await this.getTree())].filter((node) => node.label !== undefined);
    return Object.fromEntries(labelled.map((node) => [node.id, node.label as string]));
  }

  async appendEntries(
    entries: readonly AppendEntryInput[],
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    const { status, body } = await this.#http.answer<{ entries: StoredEntry[]; leafId: string | null }>(
      "POST",
      this.#path("/entries"),
      { body: { entries: withIds(entries) }, headers: ifMatch(options.expectedLeafId), idempotent: true },
    );
    return { ...body, created: status === 201 };
  }

  async importEntries(entries: readonly SessionEntry[]): Promise<void> {
    await this.#http.json("POST", this.#path("/import"), { body: { entries } });
  }

  async fork(targetId: string, options: ForkOptions = {}): Promise<RemoteStorage> {
    // The service's fork also takes `asOf` and `location`, which a fork of the library does not.
    checkForkRequest(targetId, options);
    const info = await this.#http.json<SessionInfo>("POST", this.#path("/fork"), {
      body: { entryId: targetId, ...options },
    });
    return new RemoteStorage(this.#http, info.id);
  }

  /** Where the leaf stood at `asOf` (ISO 8601; the head when absent), and how far back that can go. */
  leafAt(asOf?: string): Promise<LeafAt> {
    return this.#http.json<LeafAt>("GET", this.#path("/leaf"), { query: { asOf } });
  }

  /** The context the service builds for a leaf (the head when undefined). */
  async context(leafId?: string | null, since?: string): Promise<ContextAnswer> {
    if (leafId !== null) {
      return this.#http.json<ContextAnswer>("GET", this.#path("/context"), { query: { leafId, since } });
    }
    const info = await this.getInfo();
    return { ...buildSessionContext([], { sessionSystemPrompt: info.systemPrompt }), version: "" };
  }

  /** The context of a leaf (the head when undefined) in a model API's request shape, built by the service. */
  async contextIn<F extends ContextFormat>(
    format: F,
    options: ContextInOptions = {},
  ): Promise<ContextRequests[F]> {
    const { leafId, model, imageInput } = options;
    if (leafId === null) {
      const empty = buildSessionContext([], { sessionSystemPrompt: (await this.getInfo()).systemPrompt });
      return contextForModel(empty, format, { model, imageInput });
    }
    return this.#http.json("GET", this.#path("/context"), {
      query: {
        format,
        leafId,
        model: model && modelRefString(model),
        imageInput: imageInput === undefined ? undefined : String(imageInput),
      },
    });
  }

  /**
   * The session's events as they happen (see `watchStream`), ending with `deleted` when it is
   * deleted, while connected or while reconnecting.
   */
  watch(options: WatchOptions = {}): AsyncGenerator<SessionEvent> {
    return watchStream<SessionEvent>(this.#http, this.#path("/events"), options, {
      last: (event) => event.event === "deleted",
      gone: { event: "deleted", data: { id: this.id } },
    });
  }

  /** Opens a generation and answers its writer (see `GenerationWriter`). */
  async generate(options: GenerateOptions = {}): Promise<GenerationWriter> {
    const info = await this.#http.json<GenerationInfo>("POST", this.#path("/generations"), { body: options });
    return new GenerationWriter(this.#http, this.#path(), info);
  }

  async generation(id: string): Promise<GenerationInfo> {
    return this.#http.json("GET", generationPath(this.#path(), id));
  }

  /** Every generation still kept (in `state`, when given), oldest first, read a page at a time. */
  async generations(options: { state?: GenerationState } = {}): Promise<GenerationInfo[]> {
    const generations: GenerationInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#http.json<GenerationPage>("GET", this.#path("/generations"), {
        query: { state: options.state, limit: MAX_GENERATIONS_PAGE, cursor },
      });
      generations.push(...page.generations);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return generations;
  }

  async stopGeneration(id: string): Promise<GenerationResult> {
    return stopGeneration(this.#http, this.#path(), id);
  }

  /** A generation's chunks from an offset on, live, until it is completed or stopped. */
  async *follow(
    generation: string | GenerationInfo,
    options: FollowOptions = {},
  ): AsyncGenerator<GenerationChunk> {
    const info = typeof generation === "string" ? await this.generation(generation) : generation;
    yield* followGeneration(this.#http, info, options);
  }

  /** Compacts with the service's summarizer (or the summary given). */
  /**
   * Compacts on the service. `signal` cancels the request: a compaction the service began may
   * still be written.
   */
  async compact(options: ServiceCompactOptions = {}): Promise<StoredEntry<CompactionEntry>> {
    const { signal, ...body } = options;
    const path = this.#path("/compact");
    return (await this.#http.json<{ entry: StoredEntry<CompactionEntry> }>("POST", path, { body, signal }))
      .entry;
  }

  /**
   * Moves the head on the service, which summarizes the branch left (with `summarize`) with its own
   * summarizer, or writes `summary` as it is. `signal` cancels the request: a move the service
   * began may still be written.
   */
  navigate(targetId: string | null, options: ServiceNavigateOptions = {}): Promise<NavigateResult> {
    const { expectedLeafId, signal, ...body } = options;
    return this.#http.json("PUT", this.#path("/leaf"), {
      body: { targetId, ...body },
      headers: ifMatch(expectedLeafId),
      signal,
    });
  }

  /**
   * The session as NDJSON lines (native, pi, Claude Code or Codex), streamed. Stopping early (a
   * `break`, or `signal`) closes the connection.
   */
  async *exportLines(
    format: ExportFormat = "native",
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<string> {
    const { signal } = options;
    yield* responseLines(
      await this.#http.send("GET", this.#path("/export"), { query: { format }, signal }),
      signal,
    );
  }

  /** The session's entries matching a query (see `GET /v1/sessions/:sid/search`). */
  search(options: SessionSearchOptions): Promise<SessionSearchPage> {
    const { thinking, ...rest } = options;
    return this.#http.json("GET", this.#path("/search"), {
      query: { ...rest, ...(thinking === undefined ? {} : { thinking: String(thinking) }) },
    });
  }

  async delete(): Promise<void> {
    await this.#http.json("DELETE", this.#path());
  }

  async cleanup(): Promise<void> {}
}
