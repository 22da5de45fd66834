import { Hono } from "hono";
import { viewerScript } from "./browser-bundle.js";
import { FAVICON_PATH, faviconSvg } from "./favicon";
import { viewerPage } from "./page";
import { pageHeaders } from "./page-headers";
import { viewerStyle } from "./style";

/*
 * The session viewer: one HTML page, its script, its stylesheet and its icon, all served by the
 * Worker itself (nothing from a CDN). The script is the TypeScript in ./browser, bundled when the
 * Worker is built (scripts/build-viewer.mjs). The page talks to the /v1 API with the caller's own
 * credentials, so it needs no route of its own beyond these.
 */

export const VIEWER_SCRIPT_PATH = "/viewer/app.js";
export const VIEWER_STYLE_PATH = "/viewer/app.css";
export { FAVICON_PATH };

/*
 * The page renders payloads written by agents (tool output, model text), so nothing but the
 * Worker's own script may run, and images may only be inline data: URLs from those payloads.
 */
const commonHeaders = pageHeaders([
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
]);

export const viewerApp = new Hono()
  .get("/", (c) =>
    c.body(viewerPage({ script: VIEWER_SCRIPT_PATH, style: VIEWER_STYLE_PATH, icon: FAVICON_PATH }), 200, {
      ...commonHeaders,
      "Content-Type": "text/html; charset=utf-8",
    }),
  )
  .get(VIEWER_SCRIPT_PATH, (c) =>
    c.body(viewerScript, 200, { ...commonHeaders, "Content-Type": "text/javascript; charset=utf-8" }),
  )
  .get(VIEWER_STYLE_PATH, (c) =>
    c.body(viewerStyle, 200, { ...commonHeaders, "Content-Type": "text/css; charset=utf-8" }),
  )
  .on("GET", [FAVICON_PATH, "/favicon.ico"], (c) =>
    c.body(faviconSvg, 200, {
      "Content-Type": "image/svg+xml",
      "X-Content-Type-Options": "nosniff",
      "Cache-Control": "public, max-age=86400",
    }),
  );
