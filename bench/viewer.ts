import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHROMIUM, launchChromium } from "../test/browser/chromium";
import { createChainSession } from "../test/browser/fixtures";

/*
 * The viewer, measured in headless Chromium against the running service: how soon a 10,000-entry
 * session's tree is on screen, from the page's navigation start to the viewer's own
 * `viewer:tree-rendered` mark. Each run opens a fresh page, so nothing is cached in the page.
 * Without Chromium (CHROMIUM_PATH, else /usr/bin/chromium) the section says so and measures nothing.
 */

export interface ViewerBench {
  url: string;
  quick: boolean;
  record(name: string, unit: string, samples: number[], budget?: { limit: number }): void;
}

const SESSION = "viewer-10k";

export async function viewerFigures(bench: ViewerBench): Promise<void> {
  if (!existsSync(CHROMIUM)) {
    process.stderr.write(`viewer: skipped, no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)\n`);
    return;
  }
  process.stderr.write("viewer: a 10,000-entry session opened in Chromium\n");
  await createChainSession(bench.url, SESSION, 10_000);
  const profile = await mkdtemp(join(tmpdir(), "cf-sessions-bench-chromium-"));
  const browser = await launchChromium(profile, { viewport: { width: 1440, height: 900 }, locale: "en-US" });
  try {
    const samples: number[] = [];
    for (let run = 0; run < (bench.quick ? 3 : 10); run++) {
      const page = await browser.newPage();
      await page.goto(`${bench.url}/#session=${SESSION}`);
      await page.waitForSelector(`#tree[data-rendered-session="${SESSION}"]`);
      samples.push(
        await page.evaluate(
          () => performance.getEntriesByName("viewer:tree-rendered")[0]?.startTime ?? Number.NaN,
        ),
      );
      await page.close();
    }
    bench.record("viewer: a 10,000-entry session's tree on screen, from navigation", "ms", samples, {
      limit: 1000,
    });
  } finally {
    await browser.close();
    await rm(profile, { recursive: true, force: true });
  }
}
