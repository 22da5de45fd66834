/*
 * The AI SDK's side of cf-sessions: chats kept as sessions (`CfSessionsChatStore`). The resumable
 * `ChatTransport` for generations in flight belongs here too, beside it.
 */
export type { CfSessionsChatStoreOptions, SaveChatOptions } from "./chat-store";
export { CfSessionsChatStore, UI_MESSAGE } from "./chat-store";
