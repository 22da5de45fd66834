import { write } from "./atomic-file";
import { main } from "./main";

/** Whether a write failed because stdout's reader went away (`cf-sessions list --all | head -1`). */
const readerGone = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code === "EPIPE";

/**
 * Whether the command runs until it is stopped (`sync --watch`): its output's reader going away
 * ends it as a failure, so that the service manager running it starts it again.
 */
const mirroring = process.argv.slice(2).includes("--watch");

// Output no longer read ends the program quietly, as a success: its reader took what it wanted
// (a mirror's excepted). Any other failure of stdout is one line on stderr and exit code 1.
process.stdout.on("error", (error) => {
  const quietly = readerGone(error) && !mirroring;
  if (!quietly) process.stderr.write(`cf-sessions: ${error.message}\n`);
  process.exit(quietly ? 0 : 1);
});

process.exitCode = await main(
  process.argv.slice(2),
  {
    out: (text) => process.stdout.write(`${text}\n`),
    write: (text) => process.stdout.write(text),
    stream: (text) =>
      write(process.stdout, text).catch((error: unknown) => {
        if (readerGone(error)) process.exit(0);
        throw error;
      }),
    err: (text) => process.stderr.write(text),
    isTTY: Boolean(process.stderr.isTTY),
  },
  process.env,
);
