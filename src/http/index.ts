/*
 * The HTTP API as a library: mount it inside a Worker of your own. Export the two Durable Object
 * classes (`cf-sessions/durable`) from your Worker's entry module, bind them as SESSIONS and
 * DIRECTORY with a SQLite migration (see docs/library.md, "Inside your own Worker"), and route requests to
 * `createApp()`.
 */
export { createApp } from "./app";
export type { WorkerEnv } from "./env";
