/**
 * The headers of a page the Worker serves itself (the viewer, /docs) and of its assets: its
 * content security policy (the directives given, nothing else allowed), no type sniffing, no
 * referrer, and revalidation on every load so a deploy shows at once (the files are small).
 */
export function pageHeaders(policy: readonly string[]): Record<string, string> {
  return {
    "Content-Security-Policy": [
      "default-src 'none'",
      ...policy,
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join("; "),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
  };
}

/** The colours the viewer and /docs share, light and dark (each page adds its own after them). */
export const PALETTE = {
  light: `--bg: #fbfbfa;
  --pane: #ffffff;
  --text: #1d1f23;
  --muted: #6a6f78;
  --line: #e2e3e6;
  --accent: #2557d6;
  --code: #f3f4f6;`,
  dark: `--bg: #15171a;
    --pane: #1c1f23;
    --text: #e5e7ea;
    --muted: #9096a0;
    --line: #2e3238;
    --accent: #7ea2ff;
    --code: #24282e;`,
};
