import { exportClaudeCode } from "./claude-code-export";
import { exportCodex } from "./codex-export";
import type { ExportFormat } from "./interchange";
import { exportNative } from "./native-format";
import { exportPi } from "./pi-format";
import type { Session } from "./session";

/** A session's lines in `format`, each ending in a newline, read page by page. */
export function exportLines(format: ExportFormat, session: Session): AsyncGenerator<string> {
  switch (format) {
    case "native":
      return exportNative(session);
    case "pi":
      return exportPi(session);
    case "claude-code":
      return exportClaudeCode(session);
    case "codex":
      return exportCodex(session);
  }
}
