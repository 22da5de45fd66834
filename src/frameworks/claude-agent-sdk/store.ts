import type {
  SessionKey,
  SessionStore,
  SessionStoreEntry,
  SessionSummaryEntry,
} from "@anthropic-ai/claude-agent-sdk";
import { foldSessionSummary } from "@anthropic-ai/claude-agent-sdk";
import * as z from "zod";
import type { Session, SessionInfo, SessionRepo } from "../../core";
import { Id, SessionError } from "../../core";
import { sha256Hex } from "../../core/bytes";
import { transcriptLines } from "../../core/claude-code-export";
import { importBatches } from "../../core/interchange";
import { exportClaudeCode } from "../../core/public/interchange";
import { keyedId } from "../keys";
import { SessionHandles } from "../session-handles";
import type { TranscriptLine, TranscriptPlaces } from "./transcript";
import { copyPlaces, placesOf, transcriptEntries } from "./transcript";

export interface CfSessionsStoreOptions {
  /** Where transcripts are kept: a `RemoteRepo` (the service) or any of the library's repos. */
  repo: SessionRepo;
  /** What this store's session ids start with (default `claude:`). */
  sessionPrefix?: string;
  /**
   * A key's `sessionId` is the session's own id (a subagent's transcript: that id, `:` and its
   * subpath, escaped), with no prefix: any session, whoever wrote it (over HTTP, an import, another
   * framework), loads as a transcript and goes on as one. `listSessions` then reads the tenant's
   * whole listing for a project's transcripts.
   */
  keyIsSessionId?: boolean;
}

const Key = z.object({
  projectKey: z.string().min(1),
  sessionId: z.string().min(1),
  subpath: z.string().min(1).optional(),
});

const ProjectKey = z.string().min(1);
const SessionRef = Key.omit({ subpath: true });

/** Entries are JSON objects with a string `type` (and, most of them, a string `uuid`). */
const Lines = z.array(z.looseObject({ type: z.string(), uuid: z.string().optional() }));

/** The blocks of a line's message of `type` (`tool_use`, `tool_result`). */
function blocksOf(line: TranscriptLine, type: string): Record<string, unknown>[] {
  const content = (line.message as { content?: unknown } | undefined)?.content;
  if (!Array.isArray(content)) return [];
  return content.filter((block): block is Record<string, unknown> => block?.type === type);
}

/**
 * Whether one of `lines` answers a call that neither they nor a stored line made: a call written
 * elsewhere, which `load` showed under an id of its own (`transcriptLines` tells which).
 */
function answersCallMadeElsewhere(lines: readonly TranscriptLine[], places: TranscriptPlaces): boolean {
  if (places.unlined.size === 0) return false;
  const results = lines.flatMap((line) => (line.type === "user" ? blocksOf(line, "tool_result") : []));
  if (results.length === 0) return false;
  const made = new Set(lines.flatMap((line) => blocksOf(line, "tool_use").map((block) => block.id)));
  for (const [entryId, calls] of places.callsOf)
    if (!places.unlined.has(entryId)) for (const id of calls.keys()) made.add(id);
  return results.some((block) => !made.has(block.tool_use_id));
}

/**
 * Whether one of `lines` hangs from a line neither stored nor among them, which names no stored
 * entry: one `load` made a uuid for (`transcriptLines`).
 */
function underUnknownLine(lines: readonly TranscriptLine[], places: TranscriptPlaces): boolean {
  const among = new Set(lines.map((line) => line.uuid));
  return lines.some(({ parentUuid: parent }) => {
    if (typeof parent !== "string" || among.has(parent)) return false;
    return !places.entryOf.has(parent) && !places.parentOf.has(parent);
  });
}

/** What a transcript's session says of the key it keeps, and the summary kept with it. */
const KeyMetadata = z.object({
  projectKey: z.string(),
  sessionId: z.string(),
  subpath: z.string().optional(),
  /** When the store last wrote the transcript (ms): the `mtime` of `listSessions`. */
  mtime: z.number().optional(),
  summary: z
    .looseObject({ sessionId: z.string(), mtime: z.number(), data: z.record(z.string(), z.unknown()) })
    .optional(),
});
type KeyMetadata = z.infer<typeof KeyMetadata>;

/** Entries per append request, and bytes (the service takes up to 1,000 entries and 32 MiB). */
const BATCH_ENTRIES = 1000;
const BATCH_BYTES = 8 * 1024 * 1024;

function check<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new SessionError("invalid_request", `invalid ${what}`, { issues: parsed.error.issues });
  }
  return parsed.data;
}

/** What the store knows of a transcript it wrote to: where lines hang, and its metadata. */
interface Transcript {
  places: TranscriptPlaces;
  /** The session's head as this store last knew it: its appends expect it there. */
  leaf: string | null;
  metadata: KeyMetadata;
}

/** Transcripts a store keeps what it knows of at most, as many as the sessions it keeps open. */
const KEPT_TRANSCRIPTS = 1000;

/** Times an append reads its transcript again after another store (another host) wrote to it. */
const APPEND_ATTEMPTS = 4;

/**
 * A Claude Agent SDK `SessionStore` over cf-sessions: each transcript (a session's main one, or a
 * subagent's under its subpath) is a session, each line one or more entries by the Claude Code
 * import's mapping, so the viewer shows the conversation; `load` gives the lines back exactly.
 * Appends are idempotent on `uuid` and serialized per transcript in this process; stores on other
 * hosts may write to the same transcript between them (each append expects the session's head
 * where this store left it, and reads the transcript again when another moved it); the summary
 * `listSessionSummaries` answers is folded by the SDK's `foldSessionSummary` inside `append` and
 * kept in the session's metadata, with the `mtime` that `listSessions` answers.
 */
export class CfSessionsStore implements SessionStore {
  readonly #handles: SessionHandles;
  readonly #prefix: string;
  readonly #transcripts = new Map<string, Transcript>();
  readonly #queues = new Map<string, Promise<unknown>>();
  #lastMtime = 0;

  readonly #keyIsSessionId: boolean;

  constructor(options: CfSessionsStoreOptions) {
    this.#handles = new SessionHandles(options.repo);
    this.#prefix = options.sessionPrefix ?? "claude:";
    this.#keyIsSessionId = options.keyIsSessionId === true;
  }

  /**
   * The ids of a project's transcripts start with this: the prefix and a digest of the project key
   * (nothing with `keyIsSessionId`: they are any sessions).
   */
  async projectPrefix(projectKey: string): Promise<string> {
    if (this.#keyIsSessionId) return "";
    return `${this.#prefix}${(await sha256Hex(projectKey)).slice(0, 16)}:`;
  }

  /**
   * The session id of a transcript: the project's prefix, then the session id and the subpath,
   * escaped (`encodeKey`), or a digest of them when that is too long; with `keyIsSessionId`, the
   * key's session id itself (then the subpath).
   */
  async sessionIdFor(key: SessionKey): Promise<string> {
    if (this.#keyIsSessionId) {
      const id = check(Id, key.sessionId, "session id");
      return key.subpath === undefined ? id : keyedId(`${id}:`, [key.subpath]);
    }
    const parts = key.subpath === undefined ? [key.sessionId] : [key.sessionId, key.subpath];
    return keyedId(await this.projectPrefix(key.projectKey), parts);
  }

  /** Runs `task` after every earlier task on the same transcript. */
  async #serialized<T>(id: string, task: () => Promise<T>): Promise<T> {
    const before = this.#queues.get(id) ?? Promise.resolve();
    const run = before.catch(() => undefined).then(task);
    this.#queues.set(id, run);
    try {
      return await run;
    } finally {
      if (this.#queues.get(id) === run) this.#queues.delete(id);
    }
  }

  /** Keeps a transcript as the one used last, letting go of the one used longest ago past the cap. */
  #keep(id: string, transcript: Transcript): Transcript {
    this.#transcripts.delete(id);
    this.#transcripts.set(id, transcript);
    if (this.#transcripts.size > KEPT_TRANSCRIPTS)
      this.#transcripts.delete(this.#transcripts.keys().next().value as string);
    return transcript;
  }

  async #transcript(session: Session, key: SessionKey): Promise<Transcript> {
    const known = this.#transcripts.get(session.id);
    if (known) return this.#keep(session.id, known);
    // The leaf before the entries: a write after it makes the next append, which expects it there,
    // read the transcript again.
    const [header, leaf] = await Promise.all([session.getMetadata(), session.getLeafId()]);
    const stored = KeyMetadata.safeParse(header.claudeAgentSdk);
    return this.#keep(session.id, {
      places: await placesOf(session.allEntries(), leaf),
      leaf,
      metadata: stored.success ? stored.data : { ...key },
    });
  }

  #mtime(): number {
    this.#lastMtime = Math.max(Date.now(), this.#lastMtime + 1);
    return this.#lastMtime;
  }

  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    const checked = check(Key, key, "session key");
    const lines = check(Lines, entries, "transcript entries") as TranscriptLine[];
    const id = await this.sessionIdFor(checked);
    const create = { id, metadata: { claudeAgentSdk: { ...checked } } };
    await this.#serialized(id, () =>
      this.#handles.write(create, async (session) => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await this.#append(session, checked, lines, entries);
          } catch (error) {
            const conflict = error instanceof SessionError && error.code === "leaf_conflict";
            if (!conflict || attempt >= APPEND_ATTEMPTS) throw error;
            // Another store wrote to the transcript: what this one knew of it is out of date.
            this.#transcripts.delete(session.id);
          }
        }
      }),
    );
  }

  async #append(
    session: Session,
    key: SessionKey,
    lines: readonly TranscriptLine[],
    entries: SessionStoreEntry[],
  ): Promise<void> {
    let transcript = await this.#transcript(session, key);
    const { places } = transcript;
    // Lines already stored (a retry, an import run again) are not written twice.
    const seen = new Set(places.entryOf.keys());
    const fresh = lines.filter((line) => {
      if (typeof line.uuid !== "string") return true;
      if (seen.has(line.uuid)) return false;
      seen.add(line.uuid);
      return true;
    });
    if (fresh.length === 0) {
      // Nothing to append, so nothing would notice another store's summary: read it again.
      this.#transcripts.delete(session.id);
      transcript = await this.#transcript(session, key);
    } else {
      const planned = copyPlaces(places);
      // Results for calls written elsewhere name the ids `load` showed those calls under, and lines
      // under a line `load` made go on where it stands.
      const shown =
        answersCallMadeElsewhere(fresh, places) || underUnknownLine(fresh, places)
          ? await transcriptLines(session)
          : undefined;
      const written = transcriptEntries(fresh, planned, shown);
      for (const batch of importBatches(written, BATCH_ENTRIES, BATCH_BYTES)) {
        transcript.leaf = (await session.appendEntries(batch, { expectedLeafId: transcript.leaf })).leafId;
      }
      transcript.places = planned;
    }
    const mtime = this.#mtime();
    const metadata: KeyMetadata = { ...transcript.metadata, ...key, mtime };
    if (key.subpath === undefined) {
      metadata.summary = foldSessionSummary(transcript.metadata.summary, key, entries, { mtime });
    }
    // Only our key changes: what others keep beside it (a project, say) is read fresh and kept.
    const header = await session.getMetadata();
    await session.updateHeader({ metadata: { ...header, claudeAgentSdk: metadata } });
    transcript.metadata = metadata;
  }

  /**
   * The transcript's lines: those this store was given, exactly; a session written elsewhere (over
   * HTTP, imported, by another framework) or continued there reads as the Claude Code transcript of
   * its conversation (`exportClaudeCode`), under the key's session id.
   */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    const checked = check(Key, key, "session key");
    const session = await this.#handles.find(await this.sessionIdFor(checked));
    if (!session) return null;
    const lines: SessionStoreEntry[] = [];
    for await (const line of exportClaudeCode(session, { sessionId: checked.sessionId }))
      lines.push(JSON.parse(line) as SessionStoreEntry);
    return lines;
  }

  /** The transcripts of a project, from the tenant's listing (their metadata as last reported). */
  async #project(
    projectKey: string,
    prefix?: string,
  ): Promise<Array<{ info: SessionInfo; key: KeyMetadata }>> {
    const found: Array<{ info: SessionInfo; key: KeyMetadata }> = [];
    for await (const info of this.#handles.scan(prefix ?? (await this.projectPrefix(projectKey)))) {
      const key = KeyMetadata.safeParse(info.metadata.claudeAgentSdk);
      if (key.success && key.data.projectKey === projectKey) found.push({ info, key: key.data });
    }
    return found;
  }

  /**
   * The subagents' transcripts of a session: with `keyIsSessionId` their ids start with the
   * session's (`sessionIdFor`), so only those are listed, not every session of the tenant.
   */
  async #subagents(key: { projectKey: string; sessionId: string }) {
    // No session has an id that is not one: it has no subagents.
    if (this.#keyIsSessionId && !Id.safeParse(key.sessionId).success) return [];
    const prefix = this.#keyIsSessionId ? `${key.sessionId}:` : undefined;
    return (await this.#project(key.projectKey, prefix)).filter(
      ({ key: found }) => found.sessionId === key.sessionId && found.subpath !== undefined,
    );
  }

  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    const project = await this.#project(check(ProjectKey, projectKey, "project key"));
    return project
      .filter(({ key }) => key.subpath === undefined)
      .map(({ info, key }) => ({ sessionId: key.sessionId, mtime: key.mtime ?? Date.parse(info.updatedAt) }));
  }

  async listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    const project = await this.#project(check(ProjectKey, projectKey, "project key"));
    return project.flatMap(({ key }) => (key.subpath === undefined && key.summary ? [key.summary] : []));
  }

  /** Deletes a transcript; a session's main one takes its subagents' with it. */
  async delete(key: SessionKey): Promise<void> {
    const checked = check(Key, key, "session key");
    const ids = [await this.sessionIdFor(checked)];
    if (checked.subpath === undefined) {
      for (const { info } of await this.#subagents(checked)) ids.push(info.id);
    }
    for (const id of ids) {
      await this.#serialized(id, async () => {
        this.#transcripts.delete(id);
        await this.#handles.delete(id);
      });
    }
  }

  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    const checked = check(SessionRef, key, "session key");
    return (await this.#subagents(checked)).map(({ key: found }) => found.subpath as string);
  }
}
