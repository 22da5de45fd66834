import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

/*
 * A local endpoint that speaks the chat-completions protocol, for the summarizer tests (started
 * in Node by Vitest, reached from workerd over loopback). The model name picks the behaviour:
 * "ok" answers at once; "fail" answers 500; "hold:<key>" waits until POST /release/<key>.
 * GET /requests/<model> lists the request bodies received for that model.
 */

declare module "vitest" {
  interface ProvidedContext {
    fakeLlmUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const received = new Map<string, unknown[]>();
  const held = new Map<string, Array<() => void>>();
  const released = new Set<string>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (req.method === "POST" && url.pathname === "/v1/chat/completions") {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string };
        received.set(body.model, [...(received.get(body.model) ?? []), body]);
        const answer = () =>
          send(200, {
            choices: [{ message: { role: "assistant", content: `SUMMARY FROM ${body.model}` } }],
            usage: { prompt_tokens: 321, completion_tokens: 12, total_tokens: 333 },
          });
        if (body.model === "fail") return send(500, { error: { message: "model unavailable" } });
        if (body.model.startsWith("hold:")) {
          const key = body.model.slice(5);
          if (released.has(key)) return answer();
          held.set(key, [...(held.get(key) ?? []), answer]);
          return;
        }
        return answer();
      }
      if (req.method === "GET" && url.pathname.startsWith("/requests/")) {
        return send(200, received.get(decodeURIComponent(url.pathname.slice(10))) ?? []);
      }
      if (req.method === "POST" && url.pathname.startsWith("/release/")) {
        const key = decodeURIComponent(url.pathname.slice(9));
        released.add(key);
        for (const answer of held.get(key) ?? []) answer();
        held.delete(key);
        return send(200, { released: key });
      }
      send(404, { error: "no such route" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  project.provide("fakeLlmUrl", `http://127.0.0.1:${port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
