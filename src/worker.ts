import { createApp } from "./http/app";

export { SessionDirectory, SessionObject, TenantPlacement } from "./durable";

export default createApp();
