import { createApp } from "./http/app";

export { SessionDirectory, SessionObject, StreamObject } from "./durable";

export default createApp();
