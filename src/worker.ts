import { createApp } from "./http/app";

export { SessionDirectory, SessionObject } from "./durable";

export default createApp();
