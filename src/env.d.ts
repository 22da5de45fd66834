// Types of the Worker's exports (what `ctx.exports` and the test pool's `exports` hold).
declare namespace Cloudflare {
  interface GlobalProps {
    mainModule: typeof import("./worker");
  }
}
