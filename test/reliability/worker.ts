import type { DurableEnv } from "../../src/durable/internal";
import {
  SessionDirectory as ServiceDirectory,
  SessionObject as ServiceSessionObject,
  StreamObject as ServiceStreamObject,
} from "../../src/durable/internal";
import { createApp } from "../../src/http";
import { faults, faultyStorage, plannedEnv } from "./faults";

/*
 * The service as deployed (its Hono app, its session, stream and directory objects), with faults
 * that the reliability tests switch on (faults.ts): only test/reliability/wrangler.toml names this
 * Worker.
 */

/** A session object whose storage, alarm and settings follow the fault plan. */
export class SessionObject extends ServiceSessionObject {
  constructor(ctx: DurableObjectState, env: DurableEnv) {
    faultyStorage(ctx);
    super(ctx, plannedEnv(env));
  }

  override async alarm(): Promise<void> {
    if (faults.strikes("alarm", this.ctx.id.toString())) throw new Error("injected fault: the alarm failed");
    return super.alarm();
  }
}

/** A stream object whose storage and settings follow the fault plan, and whose answers to forks may be lost. */
export class StreamObject extends ServiceStreamObject {
  constructor(ctx: DurableObjectState, env: DurableEnv & Required<Pick<DurableEnv, "STREAMS">>) {
    faultyStorage(ctx);
    super(ctx, plannedEnv(env));
  }

  override async forkPoint(...args: Parameters<ServiceStreamObject["forkPoint"]>) {
    const answer = await super.forkPoint(...args);
    if (faults.strikes("answer", this.ctx.id.toString())) {
      await this.ctx.storage.sync();
      this.ctx.abort("injected fault: the answer was lost");
    }
    return answer;
  }
}

/** A directory shard that is unreachable while the plan says so: each call it fails resets it unanswered. */
export class SessionDirectory extends ServiceDirectory {}

const reachable = (name: string, method: (...args: unknown[]) => unknown) =>
  function (this: SessionDirectory, ...args: unknown[]) {
    const down = faults.directoryDown;
    const rule = down ? undefined : faults.rule("directory", this.ctx.id.toString(), name);
    if (rule?.hold) return answerOnceReleased(rule.hold, () => method.apply(this, args));
    if (down || rule) {
      if (down) faults.count("directory");
      this.ctx.abort(`injected fault: directory shard unreachable (${name})`);
      throw new Error("injected fault: directory shard unreachable");
    }
    return method.apply(this, args);
  };

async function answerOnceReleased(hold: { released: boolean }, answer: () => unknown): Promise<unknown> {
  while (!hold.released) await scheduler.wait(5);
  return answer();
}

// Every call the shard answers (over RPC or fetch) goes through the plan first.
for (const name of Object.getOwnPropertyNames(ServiceDirectory.prototype)) {
  const method = (ServiceDirectory.prototype as unknown as Record<string, unknown>)[name];
  if (name === "constructor" || name === "alarm" || typeof method !== "function") continue;
  Object.defineProperty(SessionDirectory.prototype, name, {
    value: reachable(name, method as (...args: unknown[]) => unknown),
    writable: true,
    configurable: true,
  });
}

export default createApp();
