import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createClient, type RemoteRepo } from "../../src/client";
import { earlierSession } from "../frameworks/earlier-sessions";
import {
  ANSWER,
  CONVERSATION_DOORS,
  FOLLOW_UP,
  QUESTION,
  RESULT,
  SECOND_ANSWER,
  TOOL,
} from "../support/conversation-doors";
import { type DevServer, startDevServer } from "../support/dev-server";
import { launchChromium } from "./chromium";

/*
 * Whatever door a conversation came in by, the viewer shows it as a conversation: the user's
 * question with its image, the assistant's tool call with its result under it, the answers; never
 * a custom box standing for what a framework stored.
 */

let service: DevServer;
let repo: RemoteRepo;
let browser: BrowserContext;
let userDataDir: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  service = await startDevServer({ timeoutMs: 90_000 });
  repo = createClient({ baseUrl: service.url });
  userDataDir = await mkdtemp(join(tmpdir(), "cf-sessions-doors-chromium-"));
  browser = await launchChromium(userDataDir, { viewport: { width: 1280, height: 900 }, locale: "en-US" });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

/** A page of the viewer showing the context at the head of session `id`. */
async function contextAtHead(id: string): Promise<Page> {
  const leaf = (await (await repo.open(id)).getInfo()).leafId;
  const page = await browser.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  await page.goto(`${service.url}/#${new URLSearchParams({ session: id })}`);
  await page.waitForSelector(`#tree[data-rendered-session="${id}"]`);
  await page.click(`#row-${leaf}`);
  await page.waitForSelector(`#context[data-context-for="${leaf}"]:not([aria-busy])`);
  return page;
}

describe("the viewer shows a conversation whatever door it came in by", () => {
  test.each(CONVERSATION_DOORS)("$name", async (door) => {
    const slug = door.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
    const id = await door.write(`viewer-door-${slug}-${crypto.randomUUID().slice(0, 8)}`, {
      url: service.url,
      repo,
    });
    const page = await contextAtHead(id);
    const context = page.locator("#context");
    const roles = await context
      .locator("article")
      .evaluateAll((articles) => articles.map((article) => article.getAttribute("data-role")));
    // The tool's result is shown under its call, so it has no article of its own.
    const answered = door.keepsLinesApart
      ? ["user", "assistant", "assistant", "assistant", "user", "assistant"]
      : ["user", "assistant", "assistant", "user", "assistant"];
    expect(roles).toEqual(answered);

    const question = context.locator("article").first();
    expect(await question.textContent()).toContain(QUESTION);
    expect(await question.locator("img").count()).toBe(1);

    const call = context.locator(".tool-call");
    expect(await call.count()).toBe(1);
    expect(await call.locator(".tool-name").textContent()).toBe(TOOL);
    expect(await call.locator(".tool-result").textContent()).toContain(RESULT);

    const text = (await context.textContent()) ?? "";
    for (const said of [ANSWER, FOLLOW_UP, SECOND_ANSWER]) expect(text).toContain(said);
    await page.close();
    expect(pageErrors).toEqual([]);
  });
});

describe("the viewer shows a session cf-sessions 0.1's adapters wrote as its conversation", () => {
  test.each(["openai-agents-0.1.0", "ai-sdk-0.1.0", "langgraph-0.1.0"] as const)("%s", async (name) => {
    const { session } = await earlierSession(repo, name);
    const page = await contextAtHead(session.id);
    const context = page.locator("#context");
    const roles = await context
      .locator("article")
      .evaluateAll((articles) => articles.map((article) => article.getAttribute("data-role")));
    expect(roles[0]).toBe("user");
    expect(roles).toContain("assistant");
    expect(roles.every((role) => role === "user" || role === "assistant")).toBe(true);
    expect(await context.locator("article").first().locator("img").count()).toBe(1);
    const call = context.locator(".tool-call").first();
    expect(await call.locator(".tool-result").count()).toBe(1);
    await page.close();
    expect(pageErrors).toEqual([]);
  });
});
