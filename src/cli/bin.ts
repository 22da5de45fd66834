import { write } from "./atomic-file";
import { main } from "./main";

process.exitCode = await main(
  process.argv.slice(2),
  {
    out: (text) => process.stdout.write(`${text}\n`),
    write: (text) => process.stdout.write(text),
    stream: (text) => write(process.stdout, text),
    err: (text) => process.stderr.write(text),
    isTTY: Boolean(process.stderr.isTTY),
  },
  process.env,
);
