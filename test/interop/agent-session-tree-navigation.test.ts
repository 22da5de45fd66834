/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/agent-session-tree-navigation.test.ts,
 * at commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT). pi runs these against a model (and
 * skips them without an API key); here a turn is a user message and a reply appended to the
 * session, and summaries come from the built-in extractive summarizer, so they run always.
 *
 * pi's `navigateTree(id)` is `Session.navigate`: on a user message pi puts the head on its parent
 * and the text in the editor, which is `position: "before"` here (`navigateTree` below does that
 * choice as pi does). Not ported: pi's `isCompacting` flag while summarizing (an interface state).
 * A move without a summary writes no tree entry (as in pi) but a `leaf` record of the move.
 */
import { describe, expect, it } from "vitest";
import type { BranchSummaryEntry } from "../../src/core/entries";
import { contentText } from "../../src/core/messages";
import { ExtractiveSummarizer } from "../../src/core/summarizers/extractive";
import type { Summarizer, SummaryRequest } from "../../src/core/summarizers/summarizer";
import { expectCode } from "../conformance/storage";
import type { Backend } from "./backends";
import { backends } from "./backends";
import type { PiSessionManager } from "./pi-adapter";
import { inMemory } from "./pi-adapter";
import { assistantMsg, userMsg } from "./pi-messages";

const extractive = new ExtractiveSummarizer();

/** One agent turn: the prompt and a short reply. */
async function prompt(session: PiSessionManager, text: string): Promise<void> {
  await session.appendMessage(userMsg(text));
  await session.appendMessage(assistantMsg(`A few words about: ${text}`));
}

interface NavigateResult {
  cancelled: boolean;
  aborted?: boolean;
  editorText?: string;
  summaryEntry?: BranchSummaryEntry;
}

/** pi's AgentSession.navigateTree over `Session.navigate`. */
async function navigateTree(
  session: PiSessionManager,
  targetId: string,
  options: {
    summarize?: boolean;
    customInstructions?: string;
    summarizer?: Summarizer;
    signal?: AbortSignal;
  } = {},
): Promise<NavigateResult> {
  if (targetId === (await session.getLeafId())) return { cancelled: false };
  const target = await session.getEntry(targetId);
  const onUser = target?.type === "message" && target.message.role === "user";
  try {
    const result = await session.session.navigate(targetId, {
      position: onUser ? "before" : "at",
      summarize: options.summarize ?? false,
      summarizer: options.summarizer ?? extractive,
      ...(options.customInstructions ? { customInstructions: options.customInstructions } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return {
      cancelled: false,
      ...(onUser && target?.type === "message" ? { editorText: contentText(target.message.content) } : {}),
      ...(result.entry ? { summaryEntry: result.entry } : {}),
    };
  } catch (error) {
    if (options.signal?.aborted) return { cancelled: true, aborted: true };
    throw error;
  }
}

for (const backend of backends()) {
  describe(`AgentSession tree navigation (${backend.name})`, () => {
    async function createTestSession(b: Backend) {
      const session = await inMemory(b);
      return { session, sessionManager: session };
    }

    it("should navigate to user message and put text in editor", async () => {
      const { session } = await createTestSession(backend);

      // Build conversation: u1 -> a1 -> u2 -> a2
      await prompt(session, "First message");
      await prompt(session, "Second message");

      // Get tree entries
      const tree = await session.getTree();
      expect(tree.length).toBe(1);

      // Find the first user entry (u1)
      const rootNode = tree[0];
      expect(rootNode?.entry.type).toBe("message");

      // Navigate to root user message without summarization
      const result = await navigateTree(session, rootNode?.entry.id as string, { summarize: false });

      expect(result.cancelled).toBe(false);
      expect(result.editorText).toBe("First message");

      // After navigating to root user message, leaf should be null (empty conversation)
      expect(await session.getLeafId()).toBeNull();
    });

    it("should navigate to non-user message without editor text", async () => {
      const { session, sessionManager } = await createTestSession(backend);

      // Build conversation
      await prompt(session, "Hello");

      // Get the assistant message
      const entries = await sessionManager.getEntries();
      const assistantEntry = entries.find((e) => e.type === "message" && e.message.role === "assistant");
      expect(assistantEntry).toBeDefined();

      // Navigate to assistant message
      const result = await navigateTree(session, assistantEntry?.id as string, { summarize: false });

      expect(result.cancelled).toBe(false);
      expect(result.editorText).toBeUndefined();

      // Leaf should be the assistant entry
      expect(await sessionManager.getLeafId()).toBe(assistantEntry?.id);
    });

    it("should create branch summary when navigating with summarize=true", async () => {
      const { session, sessionManager } = await createTestSession(backend);

      // Build conversation: u1 -> a1 -> u2 -> a2
      await prompt(session, "What is 2+2?");
      await prompt(session, "What is 3+3?");

      // Get tree and find first user message
      const tree = await sessionManager.getTree();
      const rootNode = tree[0];

      // Navigate to root user message WITH summarization
      const result = await navigateTree(session, rootNode?.entry.id as string, { summarize: true });

      expect(result.cancelled).toBe(false);
      expect(result.editorText).toBe("What is 2+2?");
      expect(result.summaryEntry).toBeDefined();
      expect(result.summaryEntry?.type).toBe("branch_summary");
      expect(result.summaryEntry?.summary).toBeTruthy();
      expect(result.summaryEntry?.summary.length).toBeGreaterThan(0);

      // Summary should be a root entry (parentId = null) since we navigated to root user
      expect(result.summaryEntry?.parentId).toBeNull();
      // It covers what was left (a1, u2, a2), not the message navigated to (as pi collects it)
      expect(result.summaryEntry?.summary).toContain("What is 3+3?");
      expect(result.summaryEntry?.summary).not.toContain("What is 2+2?");

      // Leaf should be the summary entry
      expect(await sessionManager.getLeafId()).toBe(result.summaryEntry?.id);
    });

    it("should attach summary to correct parent when navigating to nested user message", async () => {
      const { session, sessionManager } = await createTestSession(backend);

      // Build conversation: u1 -> a1 -> u2 -> a2 -> u3 -> a3
      await prompt(session, "Message one");
      await prompt(session, "Message two");
      await prompt(session, "Message three");

      // Get the second user message (u2)
      const entries = await sessionManager.getEntries();
      const userEntries = entries.filter((e) => e.type === "message" && e.message.role === "user");
      expect(userEntries.length).toBe(3);

      const u2 = userEntries[1];
      const a1 = entries.find((e) => e.id === u2?.parentId); // a1 is parent of u2

      // Navigate to u2 with summarization
      const result = await navigateTree(session, u2?.id as string, { summarize: true });

      expect(result.cancelled).toBe(false);
      expect(result.editorText).toBe("Message two");
      expect(result.summaryEntry).toBeDefined();

      // Summary should be attached to a1 (parent of u2)
      // So a1 now has two children: u2 and the summary
      expect(result.summaryEntry?.parentId).toBe(a1?.id);
      expect(result.summaryEntry?.summary).toContain("Message three");
      expect(result.summaryEntry?.summary).not.toContain("Message two");

      // Verify tree structure
      const children = await sessionManager.getChildren(a1?.id as string);
      expect(children.length).toBe(2);

      const childTypes = children.map((c) => c.type).sort();
      expect(childTypes).toContain("branch_summary");
      expect(childTypes).toContain("message");
    });

    it("should attach summary to selected node when navigating to assistant message", async () => {
      const { session, sessionManager } = await createTestSession(backend);

      // Build conversation: u1 -> a1 -> u2 -> a2
      await prompt(session, "Hello");
      await prompt(session, "Goodbye");

      // Get the first assistant message (a1)
      const entries = await sessionManager.getEntries();
      const assistantEntries = entries.filter((e) => e.type === "message" && e.message.role === "assistant");
      const a1 = assistantEntries[0];

      // Navigate to a1 with summarization
      const result = await navigateTree(session, a1?.id as string, { summarize: true });

      expect(result.cancelled).toBe(false);
      expect(result.editorText).toBeUndefined(); // No editor text for assistant messages
      expect(result.summaryEntry).toBeDefined();

      // Summary should be attached to a1 (the selected node)
      expect(result.summaryEntry?.parentId).toBe(a1?.id);

      // Leaf should be the summary entry
      expect(await sessionManager.getLeafId()).toBe(result.summaryEntry?.id);
    });

    it("should handle abort during summarization", async () => {
      const { session, sessionManager } = await createTestSession(backend);

      // Build conversation
      await prompt(session, "Tell me about something");
      await prompt(session, "Continue");

      const entriesBefore = await sessionManager.getEntries();
      const leafBefore = await sessionManager.getLeafId();

      // Get root user message
      const tree = await sessionManager.getTree();
      const rootNode = tree[0];

      // A summarizer that waits until it is aborted, as a model call would
      let started!: () => void;
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      const waiting: Summarizer = {
        name: "waiting",
        summarize: (_request, signal) =>
          new Promise((_resolve, reject) => {
            started();
            signal?.addEventListener("abort", () => reject(new Error("aborted")));
          }),
      };
      const controller = new AbortController();

      // Start navigation with summarization but abort once the summary has started
      const navigationPromise = navigateTree(session, rootNode?.entry.id as string, {
        summarize: true,
        summarizer: waiting,
        signal: controller.signal,
      });
      await running;
      controller.abort();

      const result = await navigationPromise;

      expect(result.cancelled).toBe(true);
      expect(result.aborted).toBe(true);
      expect(result.summaryEntry).toBeUndefined();

      // Session should be unchanged
      const entriesAfter = await sessionManager.getEntries();
      expect(entriesAfter.length).toBe(entriesBefore.length);
      expect(await sessionManager.getLeafId()).toBe(leafBefore);
      // What a failed summary is, for a caller without a signal of its own
      await expectCode(
        sessionManager.session.navigate(rootNode?.entry.id as string, {
          summarize: true,
          summarizer: { name: "down", summarize: () => Promise.reject(new Error("down")) },
        }),
        "branch_summary_failed",
      );
    });

    it("should not create summary when navigating without summarize option", async () => {
      const { session, sessionManager } = await createTestSession(backend);

      // Build conversation
      await prompt(session, "First");
      await prompt(session, "Second");

      const entriesBefore = (await sessionManager.getEntries()).length;

      // Navigate without summarization
      const tree = await sessionManager.getTree();
      await navigateTree(session, tree[0]?.entry.id as string, { summarize: false });

      // No new entries should be created
      const entriesAfter = (await sessionManager.getEntries()).length;
      expect(entriesAfter).toBe(entriesBefore);

      // No branch_summary entries
      const summaries = (await sessionManager.getEntries()).filter((e) => e.type === "branch_summary");
      expect(summaries.length).toBe(0);
    });

    it("should handle navigation to same position (no-op)", async () => {
      const { session, sessionManager } = await createTestSession(backend);

      // Build conversation
      await prompt(session, "Hello");

      const leafBefore = await sessionManager.getLeafId();
      expect(leafBefore).toBeTruthy();
      const entriesBefore = (await sessionManager.getEntries()).length;

      // Navigate to current leaf
      const result = await navigateTree(session, leafBefore as string, { summarize: false });

      expect(result.cancelled).toBe(false);
      expect(await sessionManager.getLeafId()).toBe(leafBefore);
      expect((await sessionManager.getEntries()).length).toBe(entriesBefore);
    });

    it("should support custom summarization instructions", async () => {
      const { session, sessionManager } = await createTestSession(backend);

      // Build conversation
      await prompt(session, "What is TypeScript?");

      // A summarizer that follows the instructions it is given, as pi's test asks of the model
      const requests: SummaryRequest[] = [];
      const obedient: Summarizer = {
        name: "obedient",
        summarize: async (request) => {
          requests.push(request);
          return {
            text: `Talked about TypeScript. ${request.customInstructions?.match(/MONKEY.*MONKEY/)?.[0]}`,
          };
        },
      };

      // Navigate with custom instructions (appended as "Additional focus")
      const tree = await sessionManager.getTree();
      const result = await navigateTree(session, tree[0]?.entry.id as string, {
        summarize: true,
        summarizer: obedient,
        customInstructions:
          "After the summary, you MUST end with exactly: MONKEY MONKEY MONKEY. This is of utmost importance.",
      });

      expect(result.summaryEntry).toBeDefined();
      expect(result.summaryEntry?.summary).toBeTruthy();
      // Verify custom instructions were followed
      expect(result.summaryEntry?.summary).toContain("MONKEY MONKEY MONKEY");
      expect(requests[0]?.customInstructions).toContain("MONKEY MONKEY MONKEY");
    });
  });

  describe(`AgentSession tree navigation - branch scenarios (${backend.name})`, () => {
    it("should navigate between branches correctly", async () => {
      const session = await inMemory(backend);
      const sessionManager = session;

      // Build main path: u1 -> a1 -> u2 -> a2
      await prompt(session, "Main branch start");
      await prompt(session, "Main branch continue");

      // Get a1 id for branching
      const entries = await sessionManager.getEntries();
      const a1 = entries.find((e) => e.type === "message" && e.message.role === "assistant");

      // Create a branch from a1: a1 -> u3 -> a3
      await sessionManager.branch(a1?.id as string);
      await prompt(session, "Branch path");

      // Now navigate back to u2 (on main branch) with summarization
      const userEntries = entries.filter((e) => e.type === "message" && e.message.role === "user");
      const u2 = userEntries[1]; // "Main branch continue"

      const result = await navigateTree(session, u2?.id as string, { summarize: true });

      expect(result.cancelled).toBe(false);
      expect(result.editorText).toBe("Main branch continue");
      expect(result.summaryEntry).toBeDefined();

      // Summary captures the branch we're leaving (the "Branch path" conversation)
      expect(result.summaryEntry?.summary.length).toBeGreaterThan(0);
      expect(result.summaryEntry?.summary).toContain("Branch path");
      expect(result.summaryEntry?.summary).not.toContain("Main branch continue");
    });
  });
}
