import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevServer, startDevServer } from "../support/dev-server";
import { launchChromium } from "./chromium";
import { request, user } from "./fixtures";

/*
 * An answer being written, in the viewer in a real browser against the real service: it grows
 * under its parent as a writer appends; a reload mid-answer goes on from the offset the tab had
 * (no chunk shown twice, none missed); the Stop button stops it, and its entry takes its place.
 */

let service: DevServer;
let browser: BrowserContext;
let userDataDir: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  service = await startDevServer({ vars: { DIRECTORY_SYNC_MS: "100" }, timeoutMs: 90_000 });
  userDataDir = await mkdtemp(join(tmpdir(), "cf-sessions-generations-chromium-"));
  browser = await launchChromium(userDataDir, { viewport: { width: 1440, height: 900 }, locale: "en-US" });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  return page;
}

/** Appends words to a generation's stream until told to pause or stop; what it wrote, in order. */
function writer(stream: string) {
  const state = {
    words: [] as string[],
    paused: false,
    /** Paused with no append in flight: `words` is all it wrote. */
    idle: false,
    stopped: false,
    refused: 0,
    failure: undefined as unknown,
  };
  const done = (async () => {
    for (let i = 0; !state.stopped; i++) {
      state.idle = state.paused;
      if (state.paused) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        i--;
        continue;
      }
      const word = `w${i} `;
      let res: Response;
      try {
        res = await fetch(`${service.url}${stream}`, {
          method: "POST",
          headers: { "Content-Type": "text/plain" },
          body: word,
        });
        await res.arrayBuffer();
      } catch (error) {
        // The service went away (a failed test ended): so does the writer.
        if (!state.stopped) state.failure = error;
        return;
      }
      if (res.status === 409) {
        state.refused++;
        return;
      }
      expect(res.status).toBe(204);
      state.words.push(word);
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  })();
  return { state, done };
}

/** The text the context pane shows of the answer in flight (empty when it shows none). */
function shownText(page: Page, id: string): Promise<string> {
  return page.evaluate(
    (gid) =>
      document.querySelector(`.in-flight[data-generation="${gid}"] .in-flight-text`)?.textContent ?? "",
    id,
  );
}

describe("an answer being written, in the viewer", () => {
  test("grows under its parent, resumes after a reload without gap or repeat, and stops with the Stop button", async () => {
    const sid = `viewer-generation-${Date.now()}`;
    await request(service.url, "POST", "/v1/sessions", { id: sid, name: "A live answer" });
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, user("q1", "Count slowly"));
    const generation = await request(service.url, "POST", `/v1/sessions/${sid}/generations`, {});
    const gid = generation.id as string;
    const write = writer(generation.stream);

    const page = await newPage();
    await page.goto(`${service.url}/#${new URLSearchParams({ session: sid })}`);
    await page.waitForSelector(`#tree[data-rendered-session="${sid}"]`);
    // Its row is under the question it answers, marked as being written, with a Stop button.
    const row = page.locator(`#row-${gid}`);
    await row.waitFor();
    expect(await row.getAttribute("class")).toContain("in-flight-row");
    expect(await row.getAttribute("aria-level")).toBe(
      await page.locator("#row-q1").getAttribute("aria-level"),
    );
    expect(await row.locator(".stop-generation").count()).toBe(1);
    // Watching the head, the answer is selected as it starts, its text whole in the context pane.
    await expect.poll(() => shownText(page, gid), { timeout: 15_000 }).toMatch(/^w0 w1 w2 w3 w4 /);
    await expect.poll(async () => (await row.locator(".text").textContent()) ?? "").toContain("w3");

    // Mid-answer: what the tab shows is exactly what was written so far, then a reload.
    const before = await shownText(page, gid);
    expect(write.state.words.join("").startsWith(before)).toBe(true);
    const reads: string[] = [];
    page.on("request", (req) => {
      if (req.url().includes(`/generations/${gid}/stream`))
        reads.push(new URL(req.url()).searchParams.get("offset") ?? "");
    });
    await page.reload();
    await page.waitForSelector(`#tree[data-rendered-session="${sid}"]`);
    await expect
      .poll(async () => (await shownText(page, gid)).length, { timeout: 15_000 })
      .toBeGreaterThan(before.length);
    // The first read after the reload started where the tab was, not at the start.
    expect(reads[0]).toBeDefined();
    expect(reads[0]).not.toBe("-1");
    const after = await shownText(page, gid);
    expect(after.startsWith(before)).toBe(true);

    // Once the writer pauses, the tab shows every word written, each once, in order.
    write.state.paused = true;
    await expect.poll(() => write.state.idle, { timeout: 15_000 }).toBe(true);
    const written = write.state.words.join("");
    await expect.poll(() => shownText(page, gid), { timeout: 15_000 }).toBe(written);
    write.state.paused = false;

    // Stop: the writer's next append is refused, and the answer becomes its entry, in its place.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await row.locator(".stop-generation").click();
    try {
      // Bounded: should the stop not reach the service, the test fails here, its writer stopped.
      await expect
        .poll(() => write.state.refused > 0 || write.state.failure !== undefined, { timeout: 15_000 })
        .toBe(true);
    } finally {
      write.state.stopped = true;
      await write.done;
    }
    expect(write.state.failure).toBeUndefined();
    expect(write.state.refused).toBe(1);
    await expect.poll(() => row.getAttribute("class"), { timeout: 15_000 }).not.toContain("in-flight-row");
    const entry = await request(service.url, "GET", `/v1/sessions/${sid}/entries/${gid}`);
    expect(entry.message.stopReason).toBe("aborted");
    expect(entry.message.content[0].text).toBe(write.state.words.join(""));
    await page.waitForSelector(`#context[data-context-for="${gid}"]:not([aria-busy])`);
    expect(await page.locator("#context").textContent()).toContain(write.state.words.slice(-1)[0]?.trim());
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  test("an answer completed while the session's events were cut off becomes its entry once they are back", async () => {
    const sid = `viewer-generation-unseen-${Date.now()}`;
    await request(service.url, "POST", "/v1/sessions", { id: sid, name: "An answer ended unseen" });
    await request(service.url, "POST", `/v1/sessions/${sid}/entries`, user("q1", "Say hello"));
    const generation = await request(service.url, "POST", `/v1/sessions/${sid}/generations`, {});
    const gid = generation.id as string;
    const appended = await fetch(`${service.url}${generation.stream}`, {
      method: "POST",
      headers: { "Content-Type": "text/plain" },
      body: "Hello there",
    });
    expect(appended.status).toBe(204);

    const page = await newPage();
    let connections = 0;
    let completed: () => void = () => undefined;
    const answerCompleted = new Promise<void>((resolve) => {
      completed = resolve;
    });
    await page.route(`**/v1/sessions/${sid}/events*`, async (route) => {
      connections++;
      if (connections === 1) {
        // The first stream announces the open answer, then drops, as a lost connection does.
        const frame = `event: generation\ndata: ${JSON.stringify(generation)}\n\n`;
        await route.fulfill({ status: 200, contentType: "text/event-stream", body: frame });
        return;
      }
      // The answer is completed while the page is away: the stream it comes back to has no word of it.
      await answerCompleted;
      await route.continue();
    });
    await page.goto(`${service.url}/#${new URLSearchParams({ session: sid })}`);
    await page.waitForSelector(`#tree[data-rendered-session="${sid}"]`);
    await expect.poll(() => shownText(page, gid), { timeout: 15_000 }).toBe("Hello there");
    await expect.poll(() => connections, { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    await request(service.url, "POST", `/v1/sessions/${sid}/generations/${gid}/complete`, {});
    completed();
    await page.waitForSelector('#live-status[data-status="live"]');

    // The row is the entry: no longer being written, no Stop button, its context and actions shown.
    const row = page.locator(`#row-${gid}`);
    await expect.poll(() => row.getAttribute("class"), { timeout: 15_000 }).not.toContain("in-flight-row");
    await expect.poll(() => page.locator(`[data-stop="${gid}"]`).count()).toBe(0);
    expect(await page.locator("#context .in-flight").count()).toBe(0);
    await page.waitForSelector(`#context[data-context-for="${gid}"]:not([aria-busy])`);
    expect(await page.locator("#context").textContent()).toContain("Hello there");
    expect(await page.isVisible("#move-leaf-button")).toBe(true);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
