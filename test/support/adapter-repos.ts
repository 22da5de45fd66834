import { afterAll } from "vitest";
import { createClient } from "../../src/client";
import { MemoryRepo } from "../../src/core/memory";
import type { SessionRepo } from "../../src/core/repo";
import { type DevServer, type DevServerOptions, startDevServer } from "./dev-server";

/*
 * The repos an adapter's tests run on, each suite named after its repo: the service over HTTP
 * ("the service": `npm start`'s server, started when a suite first asks for it and stopped after
 * the file) and "a MemoryRepo". `npm run test:unit` runs the MemoryRepo half alone, so it starts
 * no server.
 */

export type RepoCase = [name: string, makeRepo: () => Promise<SessionRepo>];

export function adapterRepos(options: DevServerOptions = {}): RepoCase[] {
  let server: Promise<DevServer> | undefined;
  afterAll(async () => {
    await (await server)?.stop();
  });
  const service = async () => {
    server ??= startDevServer(options);
    return createClient({ baseUrl: (await server).url });
  };
  return [
    ["the service", service],
    ["a MemoryRepo", async () => new MemoryRepo()],
  ];
}
