import { Hono } from "hono";
import { pageHeaders } from "../../viewer/page-headers";
import { type DocsAssets, docsPage, type OpenApiDocument } from "./page";
import { docsStyle } from "./style";

/*
 * /docs: the API reference, rendered by the Worker from its own OpenAPI document. Nothing is
 * loaded from elsewhere and no script runs on the page (the policy allows none), so it works
 * offline and can not be used to reach the viewer's token, which lives on the same origin.
 */

export const DOCS_STYLE_PATH = "/docs/docs.css";

const commonHeaders = pageHeaders(["style-src 'self'", "img-src 'self'", "form-action 'none'"]);

/** The docs routes, for a document built on first use (the routes must all be registered by then). */
export function docsApp(document: () => OpenApiDocument, assets: Omit<DocsAssets, "style">): Hono {
  let page: string | undefined;
  return new Hono()
    .get("/docs", (c) => {
      page ??= docsPage(document(), { ...assets, style: DOCS_STYLE_PATH });
      return c.body(page, 200, { ...commonHeaders, "Content-Type": "text/html; charset=utf-8" });
    })
    .get(DOCS_STYLE_PATH, (c) =>
      c.body(docsStyle, 200, { ...commonHeaders, "Content-Type": "text/css; charset=utf-8" }),
    );
}
