import { type BrowserContext, chromium } from "playwright-core";

/*
 * The Chromium every browser test drives: Debian's, headless, with nothing of its own running in
 * the background (no updates, sync or network of its own), in a profile folder of the test's.
 */

/** Debian's Chromium unless CHROMIUM_PATH names another. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export function launchChromium(
  userDataDir: string,
  options: { viewport?: { width: number; height: number }; locale?: string } = {},
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    ...options,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
