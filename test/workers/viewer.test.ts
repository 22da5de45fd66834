import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { viewerScript } from "../../src/viewer/browser-bundle.js";

/*
 * What the Worker serves of the viewer; its behaviour in a browser is test/browser's. The page
 * renders what agents wrote, so every file goes out under a policy that runs the Worker's own
 * script only.
 */

const get = (path: string) => exports.default.fetch(`http://sessions.test${path}`);

function expectStrictPolicy(res: Response): void {
  const policy = res.headers.get("Content-Security-Policy") ?? "";
  expect(policy.split("; ")).toEqual(
    expect.arrayContaining(["default-src 'none'", "script-src 'self'", "connect-src 'self'"]),
  );
  expect(policy).not.toContain("unsafe-inline");
  expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
}

describe("the viewer's files", () => {
  it("serves the page without a key, loading only its own script and stylesheet", async () => {
    const res = await get("/");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/html; charset=utf-8");
    expectStrictPolicy(res);
    const html = await res.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map(([, attributes, body]) => ({ attributes: attributes?.trim(), body }))).toEqual([
      { attributes: 'src="/viewer/app.js" defer', body: "" },
    ]);
    expect(html).toContain('<link rel="stylesheet" href="/viewer/app.css">');
  });

  it("serves the bundled script as one classic script, under the same policy", async () => {
    const res = await get("/viewer/app.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expectStrictPolicy(res);
    // Compared as booleans: a failure must not print half a megabyte of script.
    const script = await res.text();
    expect(script.length > 10_000 && script === viewerScript).toBe(true);
    // The page loads it with a plain <script src>: the library bundled in, all inside one function.
    expect(script.startsWith('"use strict";(()=>{')).toBe(true);
    expect(script.trimEnd().endsWith("})();")).toBe(true);
  });

  it("serves the stylesheet under the same policy", async () => {
    const res = await get("/viewer/app.css");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/css; charset=utf-8");
    expectStrictPolicy(res);
    expect(await res.text()).toContain("--row: 28px");
  });
});
