import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { prepareCompaction } from "../../src/core/compaction";
import { buildSessionContext } from "../../src/core/context";
import type { AgentMessage } from "../../src/core/messages";
import { estimateTokens } from "../../src/core/tokens";
import { type DevServer, startDevServer } from "../support/dev-server";
import { launchChromium } from "./chromium";
import {
  assistant,
  createChainSession,
  createDemoSession,
  createLongSession,
  type DemoSession,
  request,
  user,
} from "./fixtures";

/*
 * The viewer in a real browser against the real service: `wrangler dev` on a free port, as
 * `npm start` runs it (test/support/dev-server.ts), and Debian's Chromium driven by
 * playwright-core. Screenshots land in test-artifacts/; with UPDATE_DOCS_SCREENSHOT=1 the tree
 * view is also saved as docs/viewer.png for docs/viewer.md.
 */

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const ARTIFACTS = join(REPO, "test-artifacts");

let service: DevServer;
let browser: BrowserContext;
let userDataDir: string;
let demo: DemoSession;
const pageErrors: string[] = [];
/** Pages, stylesheets, scripts and icons that answered with an error (the API's answers aside). */
const missingResources: string[] = [];

async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  page.on("response", (response) => {
    if (response.status() >= 400 && !new URL(response.url()).pathname.startsWith("/v1/")) {
      missingResources.push(`${response.status()} ${response.url()}`);
    }
  });
  page.on("console", (message) => {
    // The API's 4xx answers are logged by Chromium as failed loads; those are expected here.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      pageErrors.push(message.text());
    }
  });
  return page;
}

/** Opens the viewer at an address and waits for that session's tree. */
async function openSession(page: Page, sid: string, entry?: string) {
  const hash = new URLSearchParams({ session: sid, ...(entry ? { entry } : {}) });
  await page.goto(`${service.url}/#${hash}`);
  await page.waitForSelector(`#tree[data-rendered-session="${sid}"]`);
}

async function select(page: Page, id: string) {
  await page.click(`#row-${id}`);
  await page.waitForSelector(`#context[data-context-for="${id}"]:not([aria-busy])`);
}

const row = (page: Page, id: string) => page.locator(`#row-${id}`);

/** Opens the compaction dialog and waits until it has read the branch. */
async function openCompactDialog(page: Page) {
  await page.click("#compact-button");
  await page.waitForSelector("#compact-dialog[open]");
  await page.waitForSelector("#compact-context[data-tokens]");
}

async function screenshot(page: Page, name: string) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}

beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  // The listing shows a write within a tenth of a second instead of a second.
  service = await startDevServer({ vars: { DIRECTORY_SYNC_MS: "100" }, timeoutMs: 90_000 });
  userDataDir = await mkdtemp(join(tmpdir(), "cf-sessions-viewer-chromium-"));
  browser = await launchChromium(userDataDir, { viewport: { width: 1440, height: 900 }, locale: "en-US" });
  demo = await createDemoSession(service.url, "viewer-demo");
  await request(service.url, "POST", "/v1/sessions", { id: "viewer-other", name: "Unrelated chat" });
  await request(service.url, "POST", "/v1/sessions/viewer-other/entries", user("o1", "Hello there"));
  // The listing follows writes a moment later (DIRECTORY_SYNC_MS): wait until it shows both.
  const demoInfo = await request(service.url, "GET", "/v1/sessions/viewer-demo");
  const expected = `viewer-other:1 viewer-demo:${demoInfo.entryCount}`;
  let listed = "";
  for (let tries = 0; tries < 100 && listed !== expected; tries++) {
    if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    const { sessions } = await request(service.url, "GET", "/v1/sessions?order=updated");
    listed = sessions.map((s: { id: string; entryCount: number }) => `${s.id}:${s.entryCount}`).join(" ");
  }
  expect(listed).toBe(expected);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

describe("the session viewer", () => {
  test("lists the tenant's sessions newest first, with preview and entry count, filtered by name", async () => {
    const page = await newPage();
    await page.goto(`${service.url}/`);
    await page.waitForSelector('[data-session="viewer-demo"]');
    await page.waitForSelector('[data-session="viewer-other"]');

    const listed = await request(service.url, "GET", "/v1/sessions?limit=50&order=updated");
    const shown = await page
      .locator(".session-button")
      .evaluateAll((els) => els.map((el) => el.getAttribute("data-session")));
    expect(shown).toEqual(listed.sessions.map((s: { id: string }) => s.id));
    expect(shown.indexOf("viewer-other")).toBeLessThan(shown.indexOf("viewer-demo"));

    const item = page.locator('[data-session="viewer-demo"]');
    await expect.poll(() => item.textContent()).toContain("Rename foo to bar in src/util.ts");
    const info = await request(service.url, "GET", "/v1/sessions/viewer-demo");
    expect(await item.textContent()).toContain(`${info.entryCount} entries`);

    await page.fill("#session-filter", "rename");
    expect(await page.locator(".session-button").count()).toBe(1);
    await page.fill("#session-filter", "");
    expect(await page.locator(".session-button").count()).toBe(shown.length);
    await page.close();
  });

  test("draws the tree: branches, the leaf highlighted, the label, model changes and summaries marked", async () => {
    const page = await newPage();
    await page.goto(`${service.url}/`);
    await page.click('[data-session="viewer-demo"]');
    await page.waitForSelector('#tree[data-rendered-session="viewer-demo"]');

    // The leaf is highlighted and selected, and its context is shown.
    await expect.poll(() => row(page, "a8").getAttribute("class")).toContain("leaf");
    expect(await row(page, "a8").locator(".leaf-badge").textContent()).toBe("leaf");
    expect(await row(page, "a8").getAttribute("aria-selected")).toBe("true");
    await page.waitForSelector('#context[data-context-for="a8"]');

    // Two branch points, each child chain indented under it; the abandoned branches are off the path.
    expect(await row(page, "q1").locator(".branches").textContent()).toContain("2 branches");
    expect(await row(page, "a3").locator(".branches").textContent()).toContain("2 branches");
    expect(await row(page, "q1").getAttribute("aria-level")).toBe("1");
    expect(await row(page, "mc1").getAttribute("aria-level")).toBe("2");
    expect(await row(page, "q2").getAttribute("aria-level")).toBe("3");
    expect(await row(page, "mc2").getAttribute("aria-level")).toBe("2");
    expect(await row(page, "q2").getAttribute("class")).toContain("off-path");
    expect(await row(page, "a1b").getAttribute("class")).toContain("off-path");
    expect(await row(page, "a3").getAttribute("class")).toContain("on-path");

    expect(await row(page, "a3").locator(".label-chip").textContent()).toBe("renamed");
    await expect.poll(() => row(page, "mc1").textContent()).toContain("anthropic/claude-sonnet-4");
    await expect.poll(() => row(page, "mc2").textContent()).toContain("openai/gpt-4o");
    await expect.poll(() => row(page, "tl1").textContent()).toContain("thinking high");
    await expect(row(page, demo.compactionId).locator(".mark-compaction").count()).resolves.toBe(1);
    await expect(row(page, demo.branchSummaryId).locator(".mark-branch_summary").count()).resolves.toBe(1);

    // q3 · a5 · r5 · a6 · q4 · a7 is a linear run: its first four entries are one collapsed row.
    const run = page.locator('[data-run="q3"]');
    expect(await run.getAttribute("aria-expanded")).toBe("false");
    expect(await run.textContent()).toContain("4 entries");
    expect(await row(page, "a5").count()).toBe(0);
    await run.locator("button").click();
    await page.waitForSelector("#row-a5");
    expect(await page.locator('[data-run="q3"]').getAttribute("aria-expanded")).toBe("true");
    await page.locator('[data-run="q3"] button').click();
    await page.waitForSelector("#row-a5", { state: "detached" });

    // The keyboard walks the rows: up from the leaf selects the entry above it.
    await page.focus("#tree");
    await page.keyboard.press("ArrowUp");
    await expect.poll(() => row(page, "q5").getAttribute("aria-selected")).toBe("true");
    await page.waitForSelector('#context[data-context-for="q5"]:not([aria-busy])');
    expect(await page.getAttribute("#tree", "aria-activedescendant")).toBe("row-q5");
    await page.close();
  });

  test("selecting an entry shows the context buildContext returns for it", async () => {
    const page = await newPage();
    await openSession(page, "viewer-demo");
    await select(page, "q2");

    const context = await request(service.url, "GET", "/v1/sessions/viewer-demo/context?leafId=q2");
    const shown = page.locator("#context");
    expect(Number(await shown.getAttribute("data-message-count"))).toBe(context.messages.length);
    // Every message shows its own estimate (a tool result under its call), and the context's is their sum.
    const figures = await shown.locator("article > header .tokens, .tool-result > summary").allTextContents();
    expect(figures).toHaveLength(context.messages.length);
    const tokens = figures.reduce((sum, text) => sum + tokenFigure(text), 0);
    expect(tokens).toBeGreaterThan(1200); // the image alone counts 1,200
    expect(Number(await shown.getAttribute("data-token-estimate"))).toBe(tokens);
    expect(await shown.locator(".token-estimate").textContent()).toBe(
      `≈ ${tokens.toLocaleString("en-US")} tokens`,
    );

    // Tool results are shown with their calls, not on their own.
    const roles = await shown
      .locator("article")
      .evaluateAll((els) => els.map((el) => el.getAttribute("data-role")));
    expect(roles).toEqual(["user", "assistant", "assistant", "assistant", "user"]);
    const readCall = shown.locator('[data-tool-call="call-read"]');
    expect(await readCall.textContent()).toContain("src/util.ts");
    expect(await readCall.locator(".tool-result").textContent()).toContain("export function foo()");
    // Thinking is collapsed until opened.
    expect(await shown.locator("details.thinking").getAttribute("open")).toBeNull();
    expect(await shown.locator("details.thinking summary").textContent()).toContain("Thinking");
    const image = shown.locator("img");
    expect(await image.getAttribute("src")).toMatch(/^data:image\/png;base64,iVBOR/);
    expect(await image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(96);
    expect(await shown.textContent()).toContain("model anthropic/claude-sonnet-4");
    expect(await shown.textContent()).toContain("thinking high");
    expect(await row(page, "q2").getAttribute("aria-selected")).toBe("true");
    expect(page.url()).toContain("entry=q2");

    // The view as the README shows it: the session and the list followed live, the search box ready.
    await page.waitForSelector('#live-status[data-status="live"]');
    await page.waitForSelector('#sessions-status[data-status="live"]');
    expect(await page.isEnabled("#search-input")).toBe(true);
    await screenshot(page, "viewer-context");
    if (process.env.UPDATE_DOCS_SCREENSHOT) {
      await page.screenshot({ path: join(REPO, "docs", "viewer.png") });
    }

    // After the compaction the model is sent its summary, then the kept messages.
    await select(page, "a8");
    const compacted = await shown
      .locator("article")
      .evaluateAll((els) => els.map((el) => el.getAttribute("data-role")));
    expect(compacted[0]).toBe("compactionSummary");
    expect(compacted).toEqual(
      (await request(service.url, "GET", "/v1/sessions/viewer-demo/context?leafId=a8")).messages.map(
        (m: AgentMessage) => m.role,
      ),
    );
    await select(page, "q4");
    const branched = await shown
      .locator("article")
      .evaluateAll((els) => els.map((el) => el.getAttribute("data-role")));
    expect(branched).toContain("branchSummary");
    await page.close();
  });

  test("searches the open session and jumps to a hit in the tree", async () => {
    const page = await newPage();
    await openSession(page, "viewer-demo", "q1");
    await page.fill("#search-input", "main");
    await page.press("#search-input", "Enter");
    await page.waitForSelector("#search-panel:not([hidden]) .search-hit");
    const hits = page.locator(".search-hit");
    // The hits the API gives, newest first, each with its matches marked.
    const expected = await request(service.url, "GET", "/v1/sessions/viewer-demo/search?q=main");
    const ids = expected.hits.map((hit: { entryId: string }) => hit.entryId);
    expect(ids).toEqual(expect.arrayContaining(["a4", "q2"]));
    expect(await hits.evaluateAll((els) => els.map((el) => el.getAttribute("data-entry")))).toEqual(ids);
    expect(await page.locator('.search-hit[data-entry="q2"] mark').allTextContents()).toEqual(["main"]);
    // q2 is on the branch left for a summary.
    expect(await page.locator('.search-hit[data-entry="q2"]').textContent()).toContain("off branch");
    expect(await page.locator("#search-status").textContent()).toBe(`${ids.length} matches, newest first`);
    // Thinking only when asked.
    const plain = await request(service.url, "GET", "/v1/sessions/viewer-demo/search?q=should");
    expect(plain.hits).toEqual([]);
    await page.fill("#search-input", "should");
    await page.press("#search-input", "Enter");
    await page.waitForSelector("#search-status:text('No matches.')");
    await page.check("#search-thinking");
    await page.press("#search-input", "Enter");
    await page.waitForSelector('.search-hit[data-entry="a1"]');
    expect(await page.locator('.search-hit[data-entry="a1"]').textContent()).toContain("thinking");
    await page.click('.search-hit[data-entry="a1"]');
    await page.waitForSelector('#context[data-context-for="a1"]:not([aria-busy])');
    expect(await row(page, "a1").getAttribute("aria-selected")).toBe("true");
    expect(page.url()).toContain("entry=a1");
    await screenshot(page, "viewer-search");
    // A query with nothing to find is explained, not a crash.
    await page.fill("#search-input", "!!!");
    await page.press("#search-input", "Enter");
    await page.waitForSelector("#error:not([hidden])");
    expect(await page.locator("#error-text").textContent()).toContain("invalid_request");
    await page.press("#search-input", "Escape");
    expect(await page.locator("#search-panel").isHidden()).toBe(true);
    await page.close();
  });

  test("moves the leaf, and sets and clears a label, from the page", async () => {
    const page = await newPage();
    await openSession(page, "viewer-demo");
    await select(page, "a4");
    await page.click("#move-leaf-button");
    await expect.poll(() => row(page, "a4").getAttribute("class")).toContain("leaf");
    expect((await request(service.url, "GET", "/v1/sessions/viewer-demo")).leafId).toBe("a4");
    expect(await row(page, "a8").getAttribute("class")).toContain("off-path");

    await select(page, "a1");
    await page.fill("#label-input", "read first");
    await page.click('#label-form button[type="submit"]');
    await expect.poll(() => row(page, "a1").locator(".label-chip").textContent()).toBe("read first");
    const labelled = await request(service.url, "GET", "/v1/sessions/viewer-demo/tree");
    expect(findNode(labelled.roots, "a1")?.label).toBe("read first");

    await page.click("#label-clear");
    await expect.poll(() => row(page, "a1").locator(".label-chip").count()).toBe(0);
    const cleared = await request(service.url, "GET", "/v1/sessions/viewer-demo/tree");
    expect(findNode(cleared.roots, "a1")?.label).toBeUndefined();
    await page.close();
  });

  test("shows API errors in words", async () => {
    await createLongSession(service.url, "viewer-raced");
    const page = await newPage();
    await openSession(page, "viewer-raced");
    await openCompactDialog(page);
    // Another writer compacts while the dialog is open: the service refuses a second one.
    await request(service.url, "POST", "/v1/sessions/viewer-raced/compact", { summary: "elsewhere" });
    await page.click("#compact-confirm");
    await page.waitForSelector("#error:not([hidden])");
    expect(await page.textContent("#error-text")).toMatch(/^nothing_to_compact: .+ \(HTTP 409\)/);
    const compactions = await request(
      service.url,
      "GET",
      "/v1/sessions/viewer-raced/entries?type=compaction",
    );
    expect(compactions.entries).toHaveLength(1);

    await page.goto(`${service.url}/#session=no-such-session`);
    await expect
      .poll(() => page.textContent("#error-text"))
      .toMatch(/^Could not open no-such-session: not_found: .+ \(HTTP 404\)/);
    // A session that did not open gets no time slider, and no second error replaces the first.
    expect(await page.isHidden("#time-travel")).toBe(true);
    await page.waitForTimeout(300);
    expect(await page.textContent("#error-text")).toMatch(/^Could not open no-such-session/);
    await page.close();
  });

  test("compacts keeping what the person chooses, with the estimate shown, and shows the summary", async () => {
    await createLongSession(service.url, "viewer-long");
    const page = await newPage();
    await openSession(page, "viewer-long");
    await openCompactDialog(page);

    // The dialog plans as the service will: the same estimate, the same cut for each choice.
    const { entries: branch } = await request(service.url, "GET", "/v1/sessions/viewer-long/branch");
    const tokens = buildSessionContext(branch).messages.reduce((sum, m) => sum + estimateTokens(m), 0);
    expect(await page.getAttribute("#compact-context", "data-tokens")).toBe(String(tokens));
    expect(await page.textContent("#compact-context")).toContain(
      `≈ ${tokens.toLocaleString("en-US")} tokens`,
    );
    expect(await page.inputValue("#compact-keep")).toBe(String(Math.min(20_000, Math.floor(tokens / 2))));
    expect(await page.isEnabled("#compact-confirm")).toBe(true);
    const keep = 12_000;
    await page.fill("#compact-keep", String(keep));
    const planned = prepareCompaction(branch, { keepRecentTokens: keep });
    await expect
      .poll(() => page.getAttribute("#compact-preview", "data-first-kept"))
      .toBe(planned.firstKeptEntryId);
    expect(await page.inputValue("#compact-keep-range")).toBe(String(keep));
    expect(await page.textContent("#compact-preview")).toMatch(
      /^Summarizes ≈ [\d,]+ tokens \(\d+ messages\)/,
    );
    await page.click("#compact-confirm");
    await page.waitForSelector("#compaction-notice:not([hidden])");

    const { entries } = await request(service.url, "GET", "/v1/sessions/viewer-long/entries?type=compaction");
    expect(entries).toHaveLength(1);
    const [compaction] = entries;
    expect(compaction.firstKeptEntryId).toBe(planned.firstKeptEntryId);
    expect(await page.textContent("#compaction-notice .compaction-summary")).toBe(compaction.summary);
    await expect.poll(() => row(page, compaction.id).getAttribute("class")).toContain("leaf");
    await page.waitForSelector(`#context[data-context-for="${compaction.id}"]:not([aria-busy])`);
    expect(await page.locator("#context article").first().getAttribute("data-role")).toBe(
      "compactionSummary",
    );
    await screenshot(page, "viewer-compacted");
    // The leaf is a compaction now: there is nothing to compact until the session goes on.
    await expect.poll(() => page.isDisabled("#compact-button")).toBe(true);
    await page.close();
  });

  test("plans a compaction after an earlier one from what that one kept, not reading what it summarized", async () => {
    const sid = `viewer-compacted-twice-${Date.now()}`;
    await createLongSession(service.url, sid);
    const path = `/v1/sessions/${sid}`;
    const first = await request(service.url, "POST", `${path}/compact`, { keepRecentTokens: 20_000 });
    await request(service.url, "POST", `${path}/entries`, {
      entries: [
        user("more1", `And module 6? ${"context ".repeat(2500)}`),
        assistant("more2", [{ type: "text", text: `Module 6 looks fine. ${"detail ".repeat(2500)}` }]),
      ],
    });
    const page = await newPage();
    const reads: URL[] = [];
    page.on("request", (sent) => {
      const url = new URL(sent.url());
      if (url.pathname.startsWith(`${path}/`)) reads.push(url);
    });
    await openSession(page, sid);
    await openCompactDialog(page);

    // The same estimate and the same cut as planned over the whole branch.
    const { entries: branch } = await request(service.url, "GET", `${path}/branch`);
    const tokens = buildSessionContext(branch).messages.reduce((sum, m) => sum + estimateTokens(m), 0);
    expect(await page.getAttribute("#compact-context", "data-tokens")).toBe(String(tokens));
    const keep = 8_000;
    await page.fill("#compact-keep", String(keep));
    await expect
      .poll(() => page.getAttribute("#compact-preview", "data-first-kept"))
      .toBe(prepareCompaction(branch, { keepRecentTokens: keep }).firstKeptEntryId);
    // Read from the first entry the earlier compaction kept: neither the branch nor what came before.
    expect(reads.filter((url) => url.pathname === `${path}/branch`)).toEqual([]);
    const listings = reads.filter(
      (url) => url.pathname === `${path}/entries` && !url.searchParams.has("type"),
    );
    const kept = await request(service.url, "GET", `${path}/entries/${first.entry.firstKeptEntryId}`);
    expect(listings.map((url) => Number(url.searchParams.get("after")))).toEqual([kept.seq - 1]);
    await page.click('#compact-form button[value="cancel"]');
    await page.close();
  });

  test("disables Compact while nothing would be dropped, and cancelling writes nothing", async () => {
    await request(service.url, "POST", "/v1/sessions", { id: "viewer-short", name: "Short chat" });
    await request(service.url, "POST", "/v1/sessions/viewer-short/entries", {
      entries: [
        user("s1", "What is 2+2?"),
        assistant("s2", [{ type: "text", text: "4" }]),
        user("s3", "And 3+3?"),
        assistant("s4", [{ type: "text", text: "6" }]),
      ],
    });
    const page = await newPage();
    await openSession(page, "viewer-short");
    const before = await request(service.url, "GET", "/v1/sessions/viewer-short");
    await openCompactDialog(page);
    const tokens = Number(await page.getAttribute("#compact-context", "data-tokens"));
    await page.fill("#compact-keep", String(tokens + 1000));
    await expect.poll(() => page.isDisabled("#compact-confirm")).toBe(true);
    expect(await page.textContent("#compact-preview")).toMatch(
      /^Nothing would be dropped: .+ Keep fewer tokens to compact\.$/,
    );
    await screenshot(page, "viewer-compact-nothing");
    await page.fill("#compact-keep", "0");
    await expect.poll(() => page.isEnabled("#compact-confirm")).toBe(true);
    await page.click('#compact-form button[value="cancel"]');
    await page.waitForSelector("#compact-dialog:not([open])", { state: "attached" });
    expect(await request(service.url, "GET", "/v1/sessions/viewer-short")).toEqual(before);
    await page.close();
  });

  test("forks from the page and opens the new session", async () => {
    const page = await newPage();
    await openSession(page, "viewer-demo");
    await page.waitForSelector('#sessions-status[data-status="live"]');
    // The new session's info is answered once the list has heard of it from the tenant's events.
    await page.route(
      (url) => /^\/v1\/sessions\/[^/]+$/.test(url.pathname) && url.pathname !== "/v1/sessions/viewer-demo",
      async (route) => {
        const id = decodeURIComponent(new URL(route.request().url()).pathname.split("/")[3] ?? "");
        await page.waitForSelector(`[data-session="${id}"]`, { timeout: 10_000 }).catch(() => undefined);
        await route.continue();
      },
    );
    await select(page, "a3");
    await page.click("#fork-button");
    await page.waitForSelector("#fork-dialog[open]");
    expect(await page.getAttribute("#fork-name", "placeholder")).toBe("Rename foo to bar");
    await page.fill("#fork-name", "try B");
    await page.click("#fork-confirm");
    await page.waitForURL((url) => !url.hash.includes("session=viewer-demo"));
    const forkId = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session") as string;
    await page.waitForSelector(`#tree[data-rendered-session="${forkId}"]`);

    const fork = await request(service.url, "GET", `/v1/sessions/${forkId}`);
    expect(fork.parentSession).toEqual({ id: "viewer-demo", entryId: "a3" });
    expect(fork.name).toBe("try B");
    expect(fork.leafId).toBe("a3");
    await expect.poll(() => row(page, "a3").getAttribute("class")).toContain("leaf");
    expect(await row(page, "a4").count()).toBe(0);
    expect(await page.textContent("#session-meta")).toContain("forked from viewer-demo at a3");
    await page.waitForSelector(`[data-session="${forkId}"][aria-current="true"]`);
    // Listed once, though both the tenant's event and the page itself added it.
    expect(await page.locator(`[data-session="${forkId}"]`).count()).toBe(1);
    await screenshot(page, "viewer-fork");
    await page.close();
  });

  test("follows the session's events: a change made elsewhere shows at once", async () => {
    const page = await newPage();
    await openSession(page, "viewer-demo");
    await page.waitForSelector('#live-status[data-status="live"]');
    expect(await page.textContent("#live-status")).toContain("live");
    const before = await request(service.url, "GET", "/v1/sessions/viewer-demo");
    await request(
      service.url,
      "POST",
      "/v1/sessions/viewer-demo/entries",
      user("live1", "Written elsewhere"),
    );
    // The viewer never polls: the row can only come from the session's event stream.
    await page.waitForSelector("#row-live1", { timeout: 10_000 });
    await expect.poll(() => row(page, "live1").getAttribute("class")).toContain("leaf");
    expect(before.leafId).not.toBe("live1");
    // The leaf was selected, so the selection followed it to the new entry.
    await expect.poll(() => row(page, "live1").getAttribute("aria-selected")).toBe("true");
    await page.waitForSelector('#context[data-context-for="live1"]:not([aria-busy])');
    await page.close();
  });

  test("follows the session's events without their payloads, which it never shows", async () => {
    const page = await newPage();
    const watches: URL[] = [];
    page.on("request", (sent) => {
      const url = new URL(sent.url());
      if (url.pathname === "/v1/sessions/viewer-demo/events") watches.push(url);
    });
    await openSession(page, "viewer-demo");
    await page.waitForSelector('#live-status[data-status="live"]');
    expect(watches.length).toBeGreaterThan(0);
    for (const url of watches) expect(url.searchParams.get("payload")).toBe("false");
    await page.close();
  });

  test("adds what the events bring to the tree it read: entries on any branch, head moves, labels, names", async () => {
    const sid = `viewer-grows-${Date.now()}`;
    await request(service.url, "POST", "/v1/sessions", { id: sid, name: "Growing" });
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, {
      entries: [user("g1", "First question"), assistant("g2", [{ type: "text", text: "First answer" }])],
    });
    const page = await newPage();
    const treeReads: string[] = [];
    page.on("request", (sent) => {
      if (new URL(sent.url()).pathname === `/v1/sessions/${sid}/tree`) treeReads.push(sent.url());
    });
    await openSession(page, sid);
    await page.waitForSelector('#live-status[data-status="live"]');
    await expect.poll(() => row(page, "g2").getAttribute("aria-selected")).toBe("true");
    const readsWhenOpen = treeReads.length;
    expect(readsWhenOpen).toBe(1);

    const path = `/v1/sessions/${sid}`;
    for (let i = 3; i <= 6; i++) {
      const entry =
        i % 2 ? user(`g${i}`, `Question ${i}`) : assistant(`g${i}`, [{ type: "text", text: `${i}` }]);
      await request(service.url, "POST", `${path}/entries`, entry);
      await page.waitForSelector(`#row-g${i}`, { timeout: 10_000 });
    }
    // Watching the head, the selection followed it.
    await expect.poll(() => row(page, "g6").getAttribute("aria-selected")).toBe("true");
    // Another branch, under the first answer: the head goes there.
    await request(service.url, "POST", `${path}/entries`, { ...user("b1", "Another way"), parentId: "g2" });
    await page.waitForSelector("#row-b1", { timeout: 10_000 });
    await expect.poll(() => row(page, "b1").getAttribute("class")).toContain("leaf");
    expect(await row(page, "g6").getAttribute("class")).toContain("off-path");
    expect(await row(page, "g2").locator(".branches").textContent()).toBe("2 branches");
    // The head moved back, a label set elsewhere, and the session renamed.
    await request(service.url, "PUT", `${path}/leaf`, { targetId: "g6" });
    await expect.poll(() => row(page, "g6").getAttribute("class")).toContain("leaf");
    expect(await row(page, "b1").getAttribute("class")).toContain("off-path");
    await request(service.url, "POST", `${path}/entries`, { type: "label", targetId: "g3", label: "asked" });
    await expect.poll(() => row(page, "g3").locator(".label-chip").textContent()).toBe("asked");
    await request(service.url, "PATCH", path, { name: "Grown" });
    await expect.poll(() => page.textContent("#session-title")).toBe("Grown");

    const info = await request(service.url, "GET", path);
    await expect.poll(() => page.textContent("#session-meta")).toContain(`${info.entryCount} entries`);
    await expect.poll(() => row(page, info.leafId).getAttribute("class")).toContain("leaf");
    const { roots } = await request(service.url, "GET", `${path}/tree`);
    const ids: string[] = [];
    for (const stack = [...roots]; stack.length > 0; ) {
      const node = stack.pop();
      ids.push(node.id);
      stack.push(...node.children);
    }
    for (const id of ids) expect(await row(page, id).count()).toBe(1);
    // Nothing of it read the whole tree again.
    expect(treeReads.length).toBe(readsWhenOpen);
    await page.close();
  });

  test("keeps following the head when a read of the session comes back late", async () => {
    const sid = `viewer-late-read-${Date.now()}`;
    await request(service.url, "POST", "/v1/sessions", { id: sid, name: "A busy session" });
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, user("h1", "The first question"));
    const page = await newPage();
    let holding = false;
    let held = false;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route(
      (url) => url.pathname === `/v1/sessions/${sid}`,
      async (route) => {
        // One read of the session's info is sent late, after the tree read beside it and after
        // another append: the info names a leaf that tree does not hold, and later reads overtake it.
        if (holding && !held && route.request().method() === "GET") {
          held = true;
          await released;
        }
        await route.continue();
      },
    );
    await openSession(page, sid);
    await page.waitForSelector('#live-status[data-status="live"]');
    await expect.poll(() => row(page, "h1").getAttribute("aria-selected")).toBe("true");

    holding = true;
    await request(
      service.url,
      "POST",
      `/v1/sessions/${sid}/entries`,
      assistant("h2", [{ type: "text", text: "One" }]),
    );
    await expect.poll(() => held, { timeout: 10_000 }).toBe(true);
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, user("h3", "The second question"));
    await page.waitForTimeout(1000);
    release();
    await page.waitForTimeout(500);
    await request(
      service.url,
      "POST",
      `/v1/sessions/${sid}/entries`,
      assistant("h4", [{ type: "text", text: "Two" }]),
    );
    // Watching the head, the selection is on the newest entry, the leaf.
    await expect.poll(() => row(page, "h4").getAttribute("aria-selected"), { timeout: 10_000 }).toBe("true");
    await expect.poll(() => row(page, "h4").getAttribute("class")).toContain("leaf");
    await page.waitForSelector('#context[data-context-for="h4"]:not([aria-busy])');
    await page.close();
  });

  test("shows the list's connection, and reads the list again after a reconnect", async () => {
    const page = await newPage();
    const missed = `viewer-missed-${Date.now()}`;
    let connections = 0;
    let created: Promise<void> | undefined;
    await page.route("**/v1/events", async (route) => {
      connections++;
      if (connections === 1) {
        // The first stream ends at once, as a dropped connection does.
        await route.fulfill({ status: 200, contentType: "text/event-stream", body: ": hello\n\n" });
        return;
      }
      if (connections === 2) {
        // While the list is disconnected, a session is made and listed: its event goes nowhere.
        created = (async () => {
          await request(service.url, "POST", "/v1/sessions", { id: missed, name: "made while away" });
          for (let tries = 0; tries < 100; tries++) {
            const listed = await request(service.url, "GET", "/v1/sessions?limit=100");
            if (listed.sessions.some((s: { id: string }) => s.id === missed)) return;
            await new Promise((r) => setTimeout(r, 50));
          }
          throw new Error("the session was never listed");
        })();
        await created;
      }
      await route.continue();
    });
    await page.goto(`${service.url}/`);
    await expect.poll(() => created !== undefined, { timeout: 10_000 }).toBe(true);
    await created;
    await page.waitForSelector(`[data-session="${missed}"]`);
    await page.waitForSelector('#sessions-status[data-status="live"]');
    expect(await page.textContent(`[data-session="${missed}"]`)).toContain("made while away");
    await page.close();
  });

  test("reads the list once its stream is open: a session made before that is listed", async () => {
    const page = await newPage();
    const opening = `viewer-opening-${Date.now()}`;
    let created: Promise<void> | undefined;
    await page.route("**/v1/events", async (route) => {
      // While the first stream is opening, a session is made and listed: its event goes nowhere.
      created ??= (async () => {
        await request(service.url, "POST", "/v1/sessions", { id: opening, name: "made while opening" });
        for (let tries = 0; tries < 100; tries++) {
          const listed = await request(service.url, "GET", "/v1/sessions?limit=100");
          if (listed.sessions.some((s: { id: string }) => s.id === opening)) return;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error("the session was never listed");
      })();
      await created;
      await route.continue();
    });
    await page.goto(`${service.url}/`);
    await page.waitForSelector('#sessions-status[data-status="live"]');
    await page.waitForSelector(`[data-session="${opening}"]`);
    await page.close();
  });

  test("deployed, asks for a token once on a 401 and keeps it in sessionStorage", async () => {
    const page = await newPage();
    const seen: Array<string | undefined> = [];
    // Stands in for a deployed service: /v1 answers 401 unless the right key is sent.
    await page.route("**/v1/**", async (route) => {
      const authorization = route.request().headers().authorization;
      seen.push(authorization);
      if (authorization !== "Bearer secret-key") {
        await route.fulfill({
          status: 401,
          contentType: "application/json",
          body: JSON.stringify({
            error: { code: "unauthorized", message: "missing Authorization: Bearer <key>" },
          }),
        });
        return;
      }
      const headers = { ...route.request().headers() };
      delete headers.authorization;
      await route.continue({ headers });
    });
    await page.goto(`${service.url}/#session=viewer-demo`);
    await page.waitForSelector("#token-dialog[open]");
    await page.fill("#token-input", "secret-key");
    await page.click('#token-form button[value="ok"]');
    await page.waitForSelector('#tree[data-rendered-session="viewer-demo"]');
    await page.waitForSelector('[data-session="viewer-demo"]');

    expect(await page.evaluate(() => sessionStorage.getItem("cf-sessions:token"))).toBe("secret-key");
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await page.locator("#token-dialog[open]").count()).toBe(0);
    const after = seen.slice(seen.lastIndexOf(undefined) + 1);
    expect(after.length).toBeGreaterThan(2);
    expect(after.every((header) => header === "Bearer secret-key")).toBe(true);
    await page.close();
  });

  test("deployed, a key entered with the button after cancelling the dialog starts live updates again", async () => {
    const sid = `viewer-keyed-${Date.now()}`;
    await request(service.url, "POST", "/v1/sessions", { id: sid, name: "Opened without a key" });
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, user("k1", "First question"));
    const page = await newPage();
    // Stands in for a deployed service: /v1 answers 401 unless the right key is sent.
    await page.route("**/v1/**", async (route) => {
      const authorization = route.request().headers().authorization;
      if (authorization !== "Bearer later-key") {
        await route.fulfill({
          status: 401,
          contentType: "application/json",
          body: JSON.stringify({
            error: { code: "unauthorized", message: "missing Authorization: Bearer <key>" },
          }),
        });
        return;
      }
      const headers = { ...route.request().headers() };
      delete headers.authorization;
      await route.continue({ headers });
    });
    await page.goto(`${service.url}/#session=${sid}`);
    await page.waitForSelector("#token-dialog[open]");
    await page.click('#token-form button[value="cancel"]');
    await page.waitForSelector("#error:not([hidden])");
    expect(await page.locator("#token-dialog[open]").count()).toBe(0);

    await page.click("#token-button");
    await page.waitForSelector("#token-dialog[open]");
    await page.fill("#token-input", "later-key");
    await page.click('#token-form button[value="ok"]');
    await page.waitForSelector(`#tree[data-rendered-session="${sid}"]`);
    // Both event streams are followed again: the list's and the open session's.
    await page.waitForSelector('#sessions-status[data-status="live"]');
    await page.waitForSelector('#live-status[data-status="live"]');
    const later = `viewer-after-key-${Date.now()}`;
    await request(service.url, "POST", "/v1/sessions", { id: later, name: "made once the key was in" });
    await page.waitForSelector(`[data-session="${later}"]`, { timeout: 10_000 });
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, user("k2", "Written elsewhere"));
    await page.waitForSelector("#row-k2", { timeout: 10_000 });
    await page.close();
  });

  test("opens a 10,000-entry session with its long run collapsed, drawing only what is in view", async () => {
    await createChainSession(service.url, "viewer-big", 10_000);
    const page = await newPage();
    await openSession(page, "viewer-big");
    // The mark `npm run bench` times the open by: set once, when the tree is first on screen.
    const marks = await page.evaluate(() =>
      performance.getEntriesByName("viewer:tree-rendered").map((mark) => (mark as PerformanceMark).detail),
    );
    expect(marks).toEqual([{ session: "viewer-big", rows: expect.any(Number), entries: 10_000 }]);

    // One collapsed run between the root and the last entries: a handful of rows for 10,000 entries.
    expect(Number(await page.getAttribute("#tree", "data-rows"))).toBeLessThan(10);
    await expect.poll(() => row(page, "m9999").getAttribute("class")).toContain("leaf");
    await page.waitForSelector('#context[data-context-for="m9999"]:not([aria-busy])', { timeout: 20_000 });
    expect(await page.getAttribute("#context", "data-message-count")).toBe("10000");
    // Only the newest messages are drawn, but the estimate is of all 10,000.
    expect(await page.locator("#context article").count()).toBe(200);
    const { messages } = await request(service.url, "GET", "/v1/sessions/viewer-big/context?leafId=m9999");
    const tokens = messages.reduce((sum: number, m: AgentMessage) => sum + estimateTokens(m), 0);
    expect(Number(await page.getAttribute("#context", "data-token-estimate"))).toBe(tokens);
    await screenshot(page, "viewer-10k");

    // Expanded, the run row is followed by every entry, but only those in view are in the DOM.
    await page.locator('[data-run="m1"] button').click();
    await page.waitForSelector("#row-m2");
    expect(Number(await page.getAttribute("#tree", "data-rows"))).toBe(10_001);
    await page.locator("#tree").evaluate((tree) => {
      tree.scrollTop = tree.scrollHeight / 2;
    });
    await page.waitForSelector("#row-m5000");
    expect(await page.locator("#tree .row").count()).toBeLessThan(120);
    await screenshot(page, "viewer-10k-expanded");
    await page.close();

    // An entry named in the address is shown in place: its collapsed run splits around it.
    const linked = await newPage();
    await linked.goto(`${service.url}/#session=viewer-big&entry=m5000`);
    await linked.waitForSelector('#row-m5000[aria-selected="true"]');
    expect(Number(await linked.getAttribute("#tree", "data-rows"))).toBeLessThan(12);
    await linked.waitForSelector('#context[data-context-for="m5000"]:not([aria-busy])', { timeout: 20_000 });
    expect(await linked.getAttribute("#context", "data-message-count")).toBe("5001");
    await linked.close();
  });

  test("shows its icon", async () => {
    const page = await newPage();
    await page.goto(`${service.url}/`);
    const icon = await page.evaluate(async () => {
      const link = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
      const res = await fetch(link?.href ?? "/nowhere");
      return { status: res.status, type: res.headers.get("Content-Type") };
    });
    expect(icon).toEqual({ status: 200, type: "image/svg+xml" });
    await page.close();
  });

  test("browses the API reference at /docs offline: nothing loaded from elsewhere, no script", async () => {
    const page = await newPage();
    const elsewhere: string[] = [];
    // As with no network: only the local server answers.
    await page.route("**/*", (route) => {
      if (route.request().url().startsWith(service.url)) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort("internetdisconnected");
    });
    const loaded: string[] = [];
    page.on("request", (req) => loaded.push(new URL(req.url()).pathname));
    await page.goto(`${service.url}/docs`);
    const spec = await request(service.url, "GET", "/v1/openapi.json");
    const operations = Object.values(spec.paths as Record<string, object>).flatMap((item) =>
      Object.keys(item),
    );
    expect(await page.locator("details.operation").count()).toBe(operations.length);
    await page.click("#op-post-v1-sessions-sid-entries > summary");
    await page.click('#op-post-v1-sessions-sid-entries details.variant:has-text("compaction") > summary');
    expect(await page.locator("#op-post-v1-sessions-sid-entries").textContent()).toContain(
      "firstKeptEntryId",
    );
    // The page is styled by its own stylesheet.
    const badge = page.locator("#op-post-v1-sessions-sid-entries .method").first();
    expect(await badge.evaluate((el) => getComputedStyle(el).color)).toBe("rgb(255, 255, 255)");
    expect(await page.evaluate(() => document.scripts.length)).toBe(0);
    expect(elsewhere).toEqual([]);
    expect(loaded).toContain("/docs/docs.css");
    for (const path of loaded) expect(["/docs", "/docs/docs.css", "/favicon.svg"]).toContain(path);
    await screenshot(page, "docs");
    await page.close();
  });

  test("shows an edited entry with what it says and what the edit shows instead, and system messages", async () => {
    const sid = "viewer-edits";
    await request(service.url, "POST", "/v1/sessions", { id: sid });
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, {
      entries: [
        {
          type: "message",
          id: "sys",
          message: { role: "system", content: "You help.", sections: { cwd: "/work" }, timestamp: 1 },
        },
        user("eq", "my password is hunter2"),
        assistant("ea", [{ type: "text", text: "noted" }]),
        {
          type: "context_edit",
          id: "edit",
          targetId: "eq",
          replacement: { content: "my password is [redacted]" },
        },
      ],
    });
    const page = await newPage();
    await openSession(page, sid);
    // The edited entry keeps its own text and says what the context shows instead.
    await expect.poll(() => row(page, "eq").locator(".text").textContent()).toContain("hunter2");
    const chip = row(page, "eq").locator(".edited-chip");
    await expect
      .poll(() => chip.getAttribute("title"))
      .toBe("context edit edit: now “my password is [redacted]”");
    await expect.poll(() => row(page, "edit").textContent()).toContain("eq: now “my password is [redacted]”");
    expect(await row(page, "edit").locator(".mark-context_edit").count()).toBe(1);
    // The context at the leaf holds the edited text, and the system message with its section.
    await select(page, "edit");
    const context = page.locator("#context");
    expect(await context.textContent()).toContain("my password is [redacted]");
    expect(await context.textContent()).not.toContain("hunter2");
    expect(await context.locator('article[data-role="system"]').textContent()).toContain("section cwd");
    await screenshot(page, "edits");
    await page.close();
  });

  test("goes back in time with the slider: the head then marked and its context shown, then back to now", async () => {
    const sid = "viewer-time";
    await request(service.url, "POST", "/v1/sessions", { id: sid, name: "Time travel" });
    const created = Date.now();
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, user("t1", "The first question"));
    // Three seconds between the two answers: a slider position falls between them, whatever its
    // "now" is to the page.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, user("t2", "The second question"));
    const page = await newPage();
    await openSession(page, sid);
    await page.waitForSelector("#time-travel:not([hidden])");
    expect(await page.textContent("#time-label")).toBe("now");

    const slide = (position: number) =>
      page.$eval(
        "#time-slider",
        (el, value) => {
          (el as HTMLInputElement).value = String(value);
          el.dispatchEvent(new Event("input"));
        },
        position,
      );
    // 1.5 s after the session was made, of the (about 3.5 s) span up to now.
    await slide(Math.round((1500 / (Date.now() - created)) * 1000));
    await page.waitForSelector("#row-t1 .then-badge");
    await page.waitForSelector('#context[data-context-for="t1"]:not([aria-busy])');
    expect(await page.textContent("#context")).toContain("The first question");
    expect(await page.textContent("#context")).not.toContain("The second question");
    expect(await row(page, "t2").locator(".leaf-badge").count()).toBe(1);
    expect(await page.isVisible("#time-now")).toBe(true);
    await screenshot(page, "viewer-time-travel");

    await slide(0);
    await expect.poll(() => page.textContent("#time-label")).toContain("no entries yet");
    expect(await page.locator("#tree .then-badge").count()).toBe(0);

    await page.click("#time-now");
    await expect.poll(() => page.textContent("#time-label")).toBe("now");
    await page.waitForSelector('#context[data-context-for="t2"]:not([aria-busy])');
    expect(await page.locator("#tree .then-badge").count()).toBe(0);
    // Looking back wrote nothing.
    expect((await request(service.url, "GET", `/v1/sessions/${sid}`)).leafId).toBe("t2");
    await page.close();
  });

  test("no script error happened on any page, and nothing the pages load was missing", () => {
    expect(pageErrors).toEqual([]);
    expect(missingResources).toEqual([]);
  });
});

/** The figure of an estimate as the page writes it: "≈ 1,234 tokens". */
function tokenFigure(text: string): number {
  const match = /≈ ([\d,]+) tokens?/.exec(text);
  if (!match?.[1]) throw new Error(`no token estimate in "${text}"`);
  return Number(match[1].replaceAll(",", ""));
}

interface Node {
  id: string;
  label?: string;
  children: Node[];
}

function findNode(roots: Node[], id: string): Node | undefined {
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop() as Node;
    if (node.id === id) return node;
    stack.push(...node.children);
  }
  return undefined;
}
