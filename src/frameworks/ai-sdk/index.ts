/*
 * The AI SDK's side of cf-sessions: chats kept as sessions (`CfSessionsChatStore`), answers piped
 * from `streamText(…).toUIMessageStream()` into a session's generation as they stream
 * (`pipeToGeneration`), and a `ChatTransport` that reads them back resumably
 * (`CfSessionsChatTransport`).
 */
export type { CfSessionsChatStoreOptions, SaveChatOptions } from "./chat-store";
export { CfSessionsChatStore, UI_MESSAGE } from "./chat-store";
export type {
  CfSessionsChatTransportOptions,
  GenerationRead,
  GenerationReader,
  StartRequest,
} from "./chat-transport";
export { CfSessionsChatTransport } from "./chat-transport";
export type { UIMessageGenerationWriter } from "./generation-pipe";
export { pipeToGeneration } from "./generation-pipe";
