import { validate } from "@langchain/langgraph-checkpoint-validation";
import { createClient, type RemoteRepo } from "../../src/client";
import { CfSessionsSaver } from "../../src/frameworks/langgraph";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * LangGraph's own conformance suite for checkpointers, whole (every case of 1.1.1), against the
 * service over HTTP. Each checkpointer it asks for gets a session prefix of its own, so one never
 * lists what another wrote (the suite's isolation rule).
 */

let server: DevServer | undefined;
let repo: RemoteRepo | undefined;
let made = 0;

validate<CfSessionsSaver>({
  checkpointerName: "cf-sessions on the service",
  beforeAllTimeout: 120_000,
  async beforeAll() {
    server = await startDevServer();
    repo = createClient({ baseUrl: server.url });
  },
  async afterAll() {
    await server?.stop();
  },
  createCheckpointer() {
    if (!repo) throw new Error("the service did not start");
    made += 1;
    return new CfSessionsSaver({ repo, sessionPrefix: `validation-${made}:` });
  },
});
