import { validate } from "@langchain/langgraph-checkpoint-validation";
import { MemoryRepo } from "../../src/core/memory";
import { CfSessionsSaver } from "../../src/frameworks/langgraph";

/*
 * LangGraph's own conformance suite for checkpointers, whole (every case of 1.1.1), against a
 * MemoryRepo: the adapter over the library's in-memory backend, as a graph in a test or a script
 * keeps its checkpoints. Each checkpointer it asks for gets a repo of its own (the suite's
 * isolation rule). langgraph-validation.test.ts runs the same suite against the service.
 */

validate<CfSessionsSaver>({
  checkpointerName: "cf-sessions on a MemoryRepo",
  createCheckpointer() {
    return new CfSessionsSaver({ repo: new MemoryRepo() });
  },
});
