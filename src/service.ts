/*
 * The service as a library: mount it inside a Worker of your own. Export the two Durable Object
 * classes from your Worker's entry module, bind them as SESSIONS and DIRECTORY with a SQLite
 * migration (see README, "Inside your own Worker"), and route requests to `createApp()`.
 */
export * from "./durable";
export { createApp } from "./http/app";
export type { WorkerEnv } from "./http/env";
