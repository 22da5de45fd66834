// A Worker of one's own serving the whole HTTP API.
import { checkPlacement, DurableRepo, SessionDirectory, SessionObject } from "cf-sessions/durable";
import { createApp, type WorkerEnv } from "cf-sessions/http";

export { SessionDirectory, SessionObject };

const sessions = createApp();

export default {
  async fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Promise<Response> {
    if (new URL(request.url).pathname === "/count") {
      await checkPlacement(env, "acme");
      const page = await new DurableRepo(env, "acme").list({ limit: 1 });
      return Response.json({ first: page.sessions[0]?.id ?? null });
    }
    return sessions.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<WorkerEnv>;
