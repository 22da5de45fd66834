/*
 * The token estimate of src/core/tokens.ts (`estimateTokens`), ported to plain JavaScript so the
 * page needs no bundle: four characters a token, an image 1,200 tokens, a tool call its name and
 * JSON arguments, thinking its text, summaries their summary. The browser test checks both agree.
 */

// biome-ignore lint/complexity/noUselessStringRaw: browser code, kept raw so a backslash added later reaches the page as written
export const tokensScript = String.raw`
const IMAGE_TOKENS = 1200;

function partChars(part) {
  if (!part || typeof part !== "object") return 0;
  switch (part.type) {
    case "text":
      return typeof part.text === "string" ? part.text.length : 0;
    case "thinking":
      return typeof part.thinking === "string" ? part.thinking.length : 0;
    case "toolCall":
      return (typeof part.name === "string" ? part.name.length : 0) + (JSON.stringify(part.arguments ?? {})?.length ?? 0);
    case "image":
      return IMAGE_TOKENS * 4;
    default:
      return 0;
  }
}

function contentChars(content) {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let chars = 0;
  for (const part of content) chars += partChars(part);
  return chars;
}

function estimateTokens(message) {
  let chars;
  switch (message.role) {
    case "bashExecution":
      chars = String(message.command ?? "").length + String(message.output ?? "").length;
      break;
    case "branchSummary":
    case "compactionSummary":
      chars = String(message.summary ?? "").length;
      break;
    default:
      chars = contentChars(message.content);
  }
  return Math.ceil(chars / 4);
}
`;
