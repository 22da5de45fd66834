import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { docsPage } from "../../src/http/docs/page";

const get = (path: string) => exports.default.fetch(`http://sessions.test${path}`);

/** The URLs a page would load or link to, from its src and href attributes. */
function references(page: string): string[] {
  return [...page.matchAll(/\s(?:src|href|action)="([^"]*)"/g)].map((match) => match[1] as string);
}

describe("/docs", () => {
  it("is served by the Worker alone: no script, nothing from elsewhere, under a policy that allows neither", async () => {
    const res = await get("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/html; charset=utf-8");
    const policy = res.headers.get("Content-Security-Policy") ?? "";
    expect(policy).toContain("default-src 'none'");
    expect(policy).not.toContain("script-src");
    expect(policy).toContain("style-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    const page = await res.text();
    expect(page).not.toMatch(/<script/i);
    expect(page).not.toMatch(/\sstyle="/i);
    expect(page).not.toContain("cdn.jsdelivr");
    for (const url of references(page)) expect(url, url).toMatch(/^(\/(?!\/)|#)/);
    // Every resource it loads answers from the Worker.
    for (const url of references(page).filter((u) => u.startsWith("/") && !u.startsWith("/v1/"))) {
      const asset = await get(url);
      expect(asset.status, url).toBe(200);
      await asset.body?.cancel();
    }
    const style = await get("/docs/docs.css");
    expect(style.headers.get("Content-Type")).toBe("text/css; charset=utf-8");
  });

  it("describes every operation and every schema of the OpenAPI document", async () => {
    const spec = (await (await get("/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { summary?: string }>>;
      components: { schemas: Record<string, unknown> };
    };
    const page = await (await get("/docs")).text();
    let operations = 0;
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        operations++;
        expect(page).toContain(
          `<span class="method method-${method}">${method.toUpperCase()}</span> <code class="path">${path}</code>`,
        );
        if (operation.summary) expect(page).toContain(operation.summary.replace(/&/g, "&amp;"));
      }
    }
    expect(operations).toBeGreaterThanOrEqual(17);
    expect(page.match(/<details class="operation"/g)?.length).toBe(operations);
    for (const name of Object.keys(spec.components.schemas)) expect(page).toContain(`id="schema-${name}"`);
    // The append body's entry shapes, by their type.
    for (const type of ["message", "compaction", "branch_summary", "label"]) {
      expect(page).toContain(`type <code>&quot;${type}&quot;</code>`);
    }
    expect(page).toContain('<a href="#schema-StoredEntry">StoredEntry</a>');
  });

  it("documents a bearer credential for every operation but a blob's signed URL, and the page says so", async () => {
    const spec = (await (await get("/v1/openapi.json")).json()) as {
      security?: unknown[];
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    const page = await (await get("/docs")).text();
    const needs = "Needs <code>Authorization: Bearer &lt;key or JWT&gt;</code>.";
    let secured = 0;
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const security = operation.security ?? spec.security ?? [];
        expect(security, `${method} ${path}`).toEqual(path.startsWith("/v1/blobs/") ? [] : [{ bearer: [] }]);
        if (security.length > 0) secured++;
      }
    }
    expect(secured).toBeGreaterThanOrEqual(20);
    expect(page.split(needs).length - 1).toBe(secured);
  });

  it("documents wrong_jurisdiction on every route a tenant's pin guards", async () => {
    const spec = (await (await get("/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    const guarded = Object.entries(spec.paths).filter(([path]) => !path.startsWith("/v1/blobs/"));
    expect(guarded.length).toBeGreaterThanOrEqual(20);
    for (const [path, item] of guarded) {
      for (const [method, operation] of Object.entries(item)) {
        expect(operation.responses["409"]?.description, `${method} ${path}`).toContain("wrong_jurisdiction");
      }
    }
  });

  it("declares the body of every write, a POST without options too, since each must declare its type", async () => {
    const spec = (await (await get("/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>>;
    };
    const undeclared: string[] = [];
    for (const [path, item] of Object.entries(spec.paths))
      for (const [method, operation] of Object.entries(item))
        if (["post", "put", "patch"].includes(method) && !operation.requestBody)
          undeclared.push(`${method} ${path}`);
    expect(undeclared).toEqual([]);
  });

  it("documents 413 and 415 on every route that takes a JSON body, as every such body may answer them", async () => {
    const spec = (await (await get("/v1/openapi.json")).json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            requestBody?: { content: Record<string, unknown> };
            responses: Record<string, { description: string }>;
          }
        >
      >;
    };
    const undocumented: string[] = [];
    for (const [path, item] of Object.entries(spec.paths))
      for (const [method, operation] of Object.entries(item)) {
        if (!operation.requestBody?.content["application/json"]) continue;
        const { 413: tooLarge, 415: notJson } = operation.responses;
        if (!tooLarge?.description.includes("payload_too_large")) undocumented.push(`413 ${method} ${path}`);
        if (!notJson?.description.includes("application/json")) undocumented.push(`415 ${method} ${path}`);
      }
    expect(undocumented).toEqual([]);
  });

  it("documents the answers a route gives beyond every route's: a summarizer's failure, a quota on restore, a format", async () => {
    const spec = (await (await get("/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    const answers: Array<[string, string, string, string]> = [
      ["put", "/v1/sessions/{sid}/leaf", "502", "branch_summary_failed"],
      ["post", "/v1/sessions/{sid}/compact", "502", "summarizer_failed"],
      ["post", "/v1/sessions/{sid}/restore", "413", "quota_exceeded"],
      ["post", "/v1/sessions/{sid}/generations", "415", "`format`"],
    ];
    for (const [method, path, status, code] of answers)
      expect(spec.paths[path]?.[method]?.responses[status]?.description, `${method} ${path}`).toContain(code);
  });

  it("describes a field that must be left out as absent, never as null, and a batch's bounds", async () => {
    const spec = (await (await get("/v1/openapi.json")).json()) as {
      paths: Record<
        string,
        Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>
      >;
    };
    const bodyOf = (path: string) =>
      spec.paths[path]?.post?.requestBody?.content["application/json"]?.schema as Record<string, any>;
    const append = bodyOf("/v1/sessions/{sid}/entries");
    const [entry, batch] = append.oneOf;
    const [ours] = entry.oneOf[0].oneOf;
    expect(ours.properties.format).toMatchObject({ not: {} });
    expect(batch.properties.type).toMatchObject({ not: {} });
    // Nowhere is null the one value a field takes: such a field admits no value at all.
    const onlyNull = (schema: unknown): unknown[] =>
      typeof schema !== "object" || schema === null
        ? []
        : [
            ...((schema as Record<string, unknown>).type === "null" ? [schema] : []),
            ...Object.values(schema).flatMap(onlyNull),
          ];
    expect(onlyNull(append).length).toBeGreaterThan(0);
    for (const schema of onlyNull(append)) expect(schema).toMatchObject({ not: {} });
    expect(batch.properties.entries).toMatchObject({ minItems: 1, maxItems: 1000 });
    expect(bodyOf("/v1/sessions/{sid}/import").properties.entries).toMatchObject({ maxItems: 1000 });
    const page = await (await get("/docs")).text();
    expect(page).toContain('<span class="type">absent</span><p>absent: the message is ours</p>');
  });

  it("describes the provider formats: the context's query and answers, the provider message entry", async () => {
    const spec = (await (await get("/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
      components: { schemas: Record<string, unknown> };
    };
    const context = spec.paths["/v1/sessions/{sid}/context"]?.get as {
      parameters: Array<{ name: string; schema: { enum?: string[] } }>;
      responses: Record<string, { content: { "application/json": { schema: { anyOf?: unknown[] } } } }>;
    };
    const format = context.parameters.find((p) => p.name === "format");
    expect(format?.schema.enum).toEqual([
      "openai-chat",
      "openai-responses",
      "anthropic",
      "gemini",
      "ai-sdk",
      "ai-sdk-ui",
    ]);
    expect(context.parameters.map((p) => p.name)).toEqual(
      expect.arrayContaining(["leafId", "format", "model", "imageInput"]),
    );
    expect(context.responses["415"]).toBeDefined();
    const answers = JSON.stringify(context.responses["200"]);
    for (const name of [
      "FullContext",
      "ContextDelta",
      "OpenAIChatRequest",
      "OpenAIResponsesRequest",
      "AnthropicRequest",
      "GeminiRequest",
      "AISDKRequest",
      "AISDKUIRequest",
    ]) {
      expect(answers).toContain(`#/components/schemas/${name}`);
      expect(spec.components.schemas[name], name).toBeDefined();
    }
    expect(spec.components.schemas.ProviderMessageEntryInput).toMatchObject({
      required: expect.arrayContaining(["type", "format", "message"]),
    });
    const append = JSON.stringify(spec.paths["/v1/sessions/{sid}/entries"]?.post);
    expect(append).toContain("#/components/schemas/ProviderMessageEntryInput");
    expect(append).toContain('"415"');
    const page = await (await get("/docs")).text();
    expect(page).toContain('id="schema-ProviderMessageEntryInput"');
    expect(page).toContain('id="schema-AnthropicRequest"');
  });

  it("escapes every text of the document", () => {
    const hostile = '<script>alert("x")</script>';
    const page = docsPage(
      {
        info: { title: hostile, version: hostile, description: hostile },
        paths: {
          [`/v1/${hostile}`]: {
            get: {
              summary: hostile,
              description: hostile,
              parameters: [{ name: hostile, in: "query", schema: { type: "string", pattern: hostile } }],
              responses: {
                200: {
                  description: hostile,
                  content: { "application/json": { schema: { enum: [hostile] } } },
                },
              },
            },
          },
        },
        components: {
          schemas: {
            Thing: { type: "object", properties: { [hostile]: { type: "string", example: hostile } } },
          },
        },
      },
      { style: "/docs/docs.css", icon: "/favicon.svg", spec: "/v1/openapi.json" },
    );
    expect(page).not.toContain("<script");
    expect(page).toContain("&lt;script&gt;");
  });
});

describe("icon", () => {
  it("is served at /favicon.svg and /favicon.ico, and the viewer and the docs declare it", async () => {
    for (const path of ["/favicon.svg", "/favicon.ico"]) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("Content-Type")).toBe("image/svg+xml");
      expect(await res.text()).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    }
    for (const page of ["/", "/docs"]) {
      const text = await (await get(page)).text();
      expect(text, page).toContain('<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
    }
  });
});
