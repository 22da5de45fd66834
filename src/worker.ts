import { createApp } from "./http/app";

export { SessionDirectory, SessionObject, StreamObject, TenantPlacement } from "./durable";

export default createApp();
