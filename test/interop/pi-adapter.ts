import type { SessionContext } from "../../src/core/context";
import type { CustomMessageEntry, SessionEntry, StoredEntry, TreeEntry } from "../../src/core/entries";
import type { AgentMessage, SummaryUsage, ThinkingLevel, Usage } from "../../src/core/messages";
import { parsePi } from "../../src/core/pi-format";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";
import { assistantUsage } from "../../src/core/tokens";
import type { TreeNode } from "../../src/core/tree";
import type { Backend } from "./backends";

/*
 * pi's SessionManager calls, answered by our `Session` over a `SessionRepo`, so pi's own session
 * tests run against our stores with their bodies kept: each synchronous pi call becomes an awaited
 * one of the same name. Entries come back as pi shows them (no `seq`, no `leaf` records).
 */

/** A node of pi's `getTree()`: the entry itself, its label and its children. */
export interface PiTreeNode {
  entry: TreeEntry;
  label?: string;
  children: PiTreeNode[];
}

function plain<E extends SessionEntry>(entry: StoredEntry<E>): E {
  const { seq: _seq, ...rest } = entry;
  return rest as unknown as E;
}

export class PiSessionManager {
  private constructor(
    readonly repo: SessionRepo,
    public session: Session,
  ) {}

  /** A new, empty session (pi's `SessionManager.inMemory()` / `create()`). */
  static async create(repo: SessionRepo, options: { id?: string } = {}): Promise<PiSessionManager> {
    return new PiSessionManager(repo, await repo.create(options));
  }

  /** A pi file's text imported and opened (pi's `SessionManager.open(path)`), under `id` if given. */
  static async open(
    repo: SessionRepo,
    text: string,
    options: { id?: string } = {},
  ): Promise<PiSessionManager> {
    return new PiSessionManager(repo, await repo.importSession(parsePi(text), options));
  }

  getSessionId(): string {
    return this.session.id;
  }

  async getHeader() {
    return this.session.getHeader();
  }

  appendMessage(message: AgentMessage): Promise<string> {
    return this.session.appendMessage(message);
  }

  appendThinkingLevelChange(thinkingLevel: string): Promise<string> {
    return this.session.appendThinkingLevelChange(thinkingLevel as ThinkingLevel);
  }

  appendModelChange(provider: string, modelId: string): Promise<string> {
    return this.session.appendModelChange(provider, modelId);
  }

  appendCompaction(
    summary: string,
    firstKeptEntryId: string,
    tokensBefore: number,
    details?: unknown,
    fromHook?: boolean,
    usage?: SummaryUsage,
  ): Promise<string> {
    return this.session.appendCompaction({
      summary,
      firstKeptEntryId,
      tokensBefore,
      ...(details === undefined ? {} : { details }),
      ...(fromHook === undefined ? {} : { fromHook }),
      ...(usage === undefined ? {} : { usage }),
    });
  }

  appendCustomEntry(customType: string, data?: unknown): Promise<string> {
    return this.session.appendCustomEntry(customType, data);
  }

  appendSessionInfo(name: string): Promise<string> {
    return this.session.appendSessionName(name);
  }

  appendCustomMessageEntry(
    customType: string,
    content: CustomMessageEntry["content"],
    display: boolean,
    details?: unknown,
  ): Promise<string> {
    return this.session.appendCustomMessageEntry({
      customType,
      content,
      display,
      ...(details === undefined ? {} : { details }),
    });
  }

  appendLabelChange(targetId: string, label: string | undefined): Promise<string> {
    return this.session.appendLabel(targetId, label);
  }

  getSessionName(): Promise<string | undefined> {
    return this.session.getName();
  }

  getLeafId(): Promise<string | null> {
    return this.session.getLeafId();
  }

  async getLeafEntry(): Promise<TreeEntry | undefined> {
    const leafId = await this.session.getLeafId();
    return leafId === null ? undefined : this.getEntry(leafId);
  }

  async getEntry(id: string): Promise<TreeEntry | undefined> {
    const entry = await this.session.getEntry(id);
    return entry && entry.type !== "leaf" ? plain(entry as StoredEntry<TreeEntry>) : undefined;
  }

  async getEntries(): Promise<TreeEntry[]> {
    const entries: TreeEntry[] = [];
    for await (const entry of this.session.allEntries()) {
      if (entry.type !== "leaf") entries.push(plain(entry as StoredEntry<TreeEntry>));
    }
    return entries;
  }

  async getChildren(parentId: string): Promise<TreeEntry[]> {
    return (await this.getEntries()).filter((entry) => entry.parentId === parentId);
  }

  getLabel(id: string): Promise<string | undefined> {
    return this.session.getLabel(id);
  }

  async getBranch(fromId?: string): Promise<TreeEntry[]> {
    return (await this.session.getBranch(fromId)).map(plain);
  }

  async getTree(): Promise<PiTreeNode[]> {
    const byId = new Map((await this.getEntries()).map((entry) => [entry.id, entry]));
    const convert = (node: TreeNode): PiTreeNode => ({
      entry: byId.get(node.id) as TreeEntry,
      ...(node.label === undefined ? {} : { label: node.label }),
      children: node.children.map(convert),
    });
    return (await this.session.getTree()).map(convert);
  }

  async branch(branchFromId: string): Promise<void> {
    await this.session.setLeafId(branchFromId);
  }

  async resetLeaf(): Promise<void> {
    await this.session.setLeafId(null);
  }

  /** As pi 1.6: the summary names the leaf it leaves (`fromId`) and hangs under `branchFromId`. */
  async branchWithSummary(
    branchFromId: string | null,
    summary: string,
    details?: unknown,
    fromHook?: boolean,
    usage?: SummaryUsage,
  ): Promise<string> {
    return this.session.appendBranchSummary(
      {
        summary,
        fromId: (await this.session.getLeafId()) ?? "root",
        ...(details === undefined ? {} : { details }),
        ...(fromHook === undefined ? {} : { fromHook }),
        ...(usage === undefined ? {} : { usage }),
      },
      { parentId: branchFromId },
    );
  }

  /**
   * pi replaces its session with the path to `leafId` (and its labels); here that is a fork, a
   * new session the manager moves to, while the source stays as it was. Returns the fork's id.
   */
  async createBranchedSession(leafId: string): Promise<string> {
    this.session = await this.session.fork(leafId);
    return this.session.id;
  }

  buildSessionContext(): Promise<SessionContext> {
    return this.session.buildContext();
  }
}

/** A fresh session on a backend: what pi's tests get from `SessionManager.inMemory()`. */
export async function inMemory(backend: Backend): Promise<PiSessionManager> {
  return PiSessionManager.create(await backend.repo());
}

/**
 * pi's `buildSessionContext(entries, leafId)` over hand-made entries: the entries written as a pi
 * file, imported, and the context built at `leafId` (the file's head when undefined).
 */
export async function contextOf(
  backend: Backend,
  entries: readonly object[],
  leafId?: string,
): Promise<SessionContext> {
  const manager = await PiSessionManager.open(await backend.repo(), piFileText(entries));
  return leafId === undefined ? manager.buildSessionContext() : manager.session.buildContext({ leafId });
}

/** pi's getLastAssistantUsage over a context: the last reply's usage that can be trusted. */
export function lastAssistantUsage(messages: readonly AgentMessage[]): Usage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const usage = assistantUsage(messages[i] as AgentMessage);
    if (usage) return usage;
  }
  return undefined;
}

/** A version 3 pi file holding `entries` in order. */
export function piFileText(entries: readonly object[], header: Record<string, unknown> = {}): string {
  const head = {
    type: "session",
    version: 3,
    id: `pi-${crypto.randomUUID()}`,
    timestamp: "2025-01-01T00:00:00.000Z",
    cwd: "/tmp",
    ...header,
  };
  return `${[head, ...entries].map((entry) => JSON.stringify(entry)).join("\n")}\n`;
}
