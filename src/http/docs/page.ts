import { isRecord } from "../../core/providers/incoming";
import { type Html, html } from "./html";
import { type Schema, schemaAnchor, schemaDetails, schemaSummary } from "./schema";

/*
 * The API reference page, rendered by the Worker from its own OpenAPI document: every operation
 * with its parameters, body and answers, then the shared schemas. Plain HTML and one stylesheet;
 * operations and union shapes fold with <details>, so the page needs no script at all.
 */

type JsonObject = Record<string, unknown>;

/** The parts of an OpenAPI 3.1 document the page shows. */
export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  paths?: Record<string, unknown>;
  components?: { schemas?: Record<string, unknown>; securitySchemes?: Record<string, unknown> };
  security?: unknown[];
}

export interface DocsAssets {
  style: string;
  icon: string;
  /** Where the OpenAPI document itself is served. */
  spec: string;
}

const METHODS = ["get", "head", "post", "put", "patch", "delete"] as const;

const asObject = (value: unknown): JsonObject => (isRecord(value) ? value : {});
const text = (value: unknown): string | undefined => (typeof value === "string" && value ? value : undefined);

function operationAnchor(method: string, path: string): string {
  return `op-${method}-${path.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "")}`;
}

interface Operation {
  method: string;
  path: string;
  operation: JsonObject;
  /** Whether it takes a credential: its own `security`, else the document's. */
  secured: boolean;
}

function operationsOf(document: OpenApiDocument): Operation[] {
  return Object.entries(document.paths ?? {}).flatMap(([path, value]) => {
    const item = asObject(value);
    return METHODS.filter((method) => isRecord(item[method])).map((method) => {
      const operation = item[method] as JsonObject;
      const security = Array.isArray(operation.security) ? operation.security : (document.security ?? []);
      return { method, path, operation, secured: security.length > 0 };
    });
  });
}

function parametersTable(parameters: unknown): Html | "" {
  const list = Array.isArray(parameters) ? parameters.filter(isRecord) : [];
  if (list.length === 0) return "";
  const rows = list.map((parameter) => {
    const schema = (isRecord(parameter.schema) ? parameter.schema : {}) as Schema;
    const description =
      text(parameter.description) ?? (isRecord(schema) ? text(schema.description) : undefined);
    return html`<tr>
<td><code>${text(parameter.name) ?? "?"}</code>${parameter.required === true ? html` <span class="required">required</span>` : ""}</td>
<td>${text(parameter.in) ?? ""}</td>
<td>${schemaSummary(schema)}</td>
<td>${description ?? ""}</td>
</tr>`;
  });
  return html`<h4>Parameters</h4>
<table class="parameters"><thead><tr><th>name</th><th>in</th><th>type</th><th>meaning</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}

/** Each media type of a body or an answer, with its schema in full (a named schema as a link). */
function content(value: unknown): Html[] {
  return Object.entries(asObject(value)).map(([mediaType, media]) => {
    const schema = (asObject(media).schema ?? {}) as Schema;
    if (isRecord(schema) && typeof schema.$ref === "string") {
      return html`<p class="media-type"><code>${mediaType}</code> ${schemaSummary(schema)}</p>`;
    }
    return html`<div class="media"><p class="media-type"><code>${mediaType}</code></p>${schemaDetails(schema)}</div>`;
  });
}

function requestBody(body: unknown): Html | "" {
  if (!isRecord(body)) return "";
  const required = body.required === true ? "required" : "optional";
  return html`<h4>Request body <span class="muted">(${required})</span></h4>${content(body.content)}`;
}

function responses(answers: unknown): Html {
  const items = Object.entries(asObject(answers)).map(([status, answer]) => {
    const kind = status.slice(0, 1);
    return html`<li>
<p><span class="status status-${kind}xx">${status}</span> ${text(asObject(answer).description) ?? ""}</p>
${content(asObject(answer).content)}
</li>`;
  });
  return html`<h4>Answers</h4><ul class="responses">${items}</ul>`;
}

function operationSection({ method, path, operation, secured }: Operation): Html {
  return html`<details class="operation" id="${operationAnchor(method, path)}">
<summary><span class="method method-${method}">${method.toUpperCase()}</span> <code class="path">${path}</code> <span class="op-summary">${text(operation.summary) ?? ""}</span></summary>
<div class="operation-body">
${text(operation.description) ? html`<p>${text(operation.description)}</p>` : ""}
${secured ? html`<p class="muted">Needs <code>Authorization: Bearer &lt;key or JWT&gt;</code>.</p>` : ""}
${parametersTable(operation.parameters)}
${requestBody(operation.requestBody)}
${responses(operation.responses)}
</div>
</details>`;
}

function schemaSection([name, schema]: [string, unknown]): Html {
  return html`<section class="component" id="${schemaAnchor(name)}">
<h3>${name}</h3>
${schemaDetails((isRecord(schema) || typeof schema === "boolean" ? schema : {}) as Schema)}
</section>`;
}

/** The whole page for `document`. */
export function docsPage(document: OpenApiDocument, assets: DocsAssets): string {
  const operations = operationsOf(document);
  const components = Object.entries(document.components?.schemas ?? {});
  const { title, version, description } = document.info;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} API</title>
<link rel="icon" href="${assets.icon}" type="image/svg+xml">
<link rel="stylesheet" href="${assets.style}">
</head>
<body>
<header class="topbar">
<h1>${title} API <span class="muted">v${version}</span></h1>
<span class="spacer"></span>
<a href="${assets.spec}">OpenAPI document</a>
<a href="/">Viewer</a>
</header>
<main class="docs">
${description ? html`<p class="lead">${description}</p>` : ""}
<p>Every <code>/v1</code> route takes <code>Authorization: Bearer &lt;key&gt;</code> (an API key or a JWT). Errors are
<code>{"error": {"code", "message", "details"?, "requestId"}}</code> (<a href="#${schemaAnchor("Error")}">Error</a>).</p>
<nav aria-label="Operations"><h2>Operations</h2><ul class="toc">${operations.map(
    ({ method, path, operation }) =>
      html`<li><a href="#${operationAnchor(method, path)}"><span class="method method-${method}">${method.toUpperCase()}</span> <code>${path}</code></a> <span class="muted">${text(operation.summary) ?? ""}</span></li>`,
  )}</ul></nav>
<section aria-labelledby="operations-title"><h2 id="operations-title">Reference</h2>${operations.map(operationSection)}</section>
<section aria-labelledby="schemas-title"><h2 id="schemas-title">Schemas</h2>${components.map(schemaSection)}</section>
</main>
</body>
</html>
`.value;
}
