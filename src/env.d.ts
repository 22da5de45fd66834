// Types of the Worker's bindings (`env`) and exports (`ctx.exports`, the test pool's `exports`).
declare namespace Cloudflare {
  interface GlobalProps {
    mainModule: typeof import("./worker");
    durableNamespaces: "SessionObject" | "SessionDirectory" | "StreamObject";
  }
  type WorkerEnv = import("./http/env").WorkerEnv;
  interface Env extends WorkerEnv {}
}
