import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  forkSession,
  getSessionMessages,
  getSubagentMessages,
  listSessions,
  listSubagents,
} from "@anthropic-ai/claude-agent-sdk";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main";
import type { Output } from "../../src/cli/output";
import { claudeProjectDir, piSessionDir } from "../../src/cli/pull";
import { createClient } from "../../src/client";
import { parseImport } from "../../src/core/import-formats";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * `cf-sessions pull` against the real service: a session written over HTTP goes into the folders
 * Claude Code, Codex and pi keep sessions in, and each agent's own reader (the Claude Agent SDK's
 * listSessions, getSessionMessages and forkSession; pi's SessionManager) reads it as the same
 * conversation, at the local checkout.
 */

let server: DevServer;
let home: string;

beforeAll(async () => {
  server = await startDevServer();
  home = mkdtempSync(join(tmpdir(), "pull-home-"));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(home, { recursive: true, force: true });
});

const usage = {
  input: 1,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** A session written over HTTP: a question, a tool call and its result, the answer. */
async function writtenOverHttp(): Promise<string> {
  const client = createClient({ baseUrl: server.url });
  const session = await client.create({ id: crypto.randomUUID() });
  const reply = (content: unknown[], stopReason: string) =>
    ({
      role: "assistant",
      content,
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage,
      stopReason,
      timestamp: 2,
    }) as never;
  await session.appendMessage({ role: "user", content: "What does notes.txt say?", timestamp: 1 });
  await session.appendMessage(
    reply([{ type: "toolCall", id: "toolu_1", name: "Read", arguments: { path: "notes.txt" } }], "toolUse"),
  );
  await session.appendMessage({
    role: "toolResult",
    toolCallId: "toolu_1",
    toolName: "Read",
    content: [{ type: "text", text: "buy more tea" }],
    isError: false,
    timestamp: 3,
  });
  await session.appendMessage(reply([{ type: "text", text: "It says to buy more tea." }], "stop"));
  return session.id;
}

async function pull(args: string[], env: Record<string, string>) {
  const lines: string[] = [];
  const errors: string[] = [];
  const output: Output = {
    out: (text) => lines.push(text),
    write: () => undefined,
    stream: async () => undefined,
    err: (text) => errors.push(text),
    isTTY: false,
  };
  const code = await main(["pull", ...args, "--json"], output, {
    CF_SESSIONS_URL: server.url,
    XDG_STATE_HOME: join(home, "state"),
    ...env,
  });
  return { code, errors: errors.join(""), answer: lines[0] ? JSON.parse(lines[0]) : undefined };
}

/** The command line run in this process against the service, what it says on stderr kept. */
function inProcessCli() {
  const errors: string[] = [];
  const output: Output = {
    out: () => undefined,
    write: () => undefined,
    stream: async () => undefined,
    err: (text) => errors.push(text),
    isTTY: false,
  };
  const env = { CF_SESSIONS_URL: server.url };
  const sync = (path: string, format: string) =>
    main(["sync", path, "--format", format, "--progress", "none"], output, env);
  return { errors, output, env, sync };
}

/** A recorded file of each agent that syncs back, and the prefix of the session its import makes. */
const AGENT_FIXTURES = [
  { format: "claude-code", fixture: "claude-code/2.1.152-redacted.jsonl", prefix: "claude-code-" },
  { format: "codex", fixture: "codex/0.135.0-redacted.jsonl", prefix: "codex-" },
] as const;

/** An agent's recorded file imported with the command line, under a session id of its own. */
async function importedFixture(
  { format, fixture, prefix }: (typeof AGENT_FIXTURES)[number],
  tag: string,
  output: Output,
  env: Record<string, string>,
) {
  const text = readFileSync(join(import.meta.dirname, "../fixtures", fixture), "utf8");
  const first = JSON.parse(text.split("\n")[0] as string);
  const sourceId = (format === "codex" ? first.payload.id : first.sessionId) as string;
  const id = crypto.randomUUID();
  const files = mkdtempSync(join(home, `${format}-${tag}-`));
  writeFileSync(join(files, `${id}.jsonl`), text.replaceAll(sourceId, id));
  expect(await main(["import", files, "--format", format, "--progress", "none"], output, env)).toBe(0);
  return createClient({ baseUrl: server.url }).open(`${prefix}${id}`);
}

describe("cf-sessions pull", () => {
  it("puts a session where Claude Code looks for the project: the SDK lists it, reads it and forks it", async () => {
    const id = await writtenOverHttp();
    const config = join(home, "claude");
    const project = join(home, "work", "my.project");
    const pulled = await pull([id, "--to", "claude-code", "--project", project], {
      CLAUDE_CONFIG_DIR: config,
    });
    expect(pulled.code, pulled.errors).toBe(0);
    expect(pulled.answer.path).toBe(
      join(claudeProjectDir(project, { CLAUDE_CONFIG_DIR: config }), `${id}.jsonl`),
    );
    expect(pulled.answer.path).toContain("-work-my-project");

    const previous = process.env.CLAUDE_CONFIG_DIR;
    process.env.CLAUDE_CONFIG_DIR = config;
    try {
      const listed = await listSessions({ dir: project });
      expect(listed.map((session) => session.sessionId)).toContain(id);
      const messages = await getSessionMessages(id, { dir: project });
      expect(messages.map((message) => message.type)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(JSON.stringify(messages[2]?.message)).toContain("buy more tea");
      expect(JSON.stringify(messages[3]?.message)).toContain("It says to buy more tea.");
      const lines = readFileSync(pulled.answer.path, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(lines.every((line) => line.cwd === undefined || line.cwd === project)).toBe(true);

      const fork = await forkSession(id, { dir: project });
      const forked = await getSessionMessages(fork.sessionId, { dir: project });
      expect(forked.map((message) => message.type)).toEqual(["user", "assistant", "user", "assistant"]);
    } finally {
      if (previous === undefined) delete process.env.CLAUDE_CONFIG_DIR;
      else process.env.CLAUDE_CONFIG_DIR = previous;
    }
  });

  it("puts a Claude Code session's subagent transcripts where Claude Code keeps them", async () => {
    const fixture = readFileSync(
      join(import.meta.dirname, "../fixtures/claude-code/1.0.108-sidechains.jsonl"),
      "utf8",
    );
    const lines = fixture.split("\n").filter((line) => line.trim() !== "");
    const files = mkdtempSync(join(home, "cc-files-"));
    writeFileSync(join(files, "main.jsonl"), `${lines.join("\n")}\n`);
    const side = lines.filter((line) => JSON.parse(line).isSidechain === true);
    writeFileSync(join(files, "agent.jsonl"), `${side.join("\n")}\n`);
    const errors: string[] = [];
    const output: Output = {
      out: () => undefined,
      write: () => undefined,
      stream: async () => undefined,
      err: (t) => errors.push(t),
      isTTY: false,
    };
    const imported = await main(["import", files, "--format", "claude-code", "--progress", "none"], output, {
      CF_SESSIONS_URL: server.url,
    });
    expect(imported, errors.join("")).toBe(0);

    const sessionId = JSON.parse(lines[0] as string).sessionId as string;
    const config = join(home, "claude-subagents");
    const project = join(home, "work", "Demo");
    const pulled = await pull([`claude-code-${sessionId}`, "--to", "claude-code", "--project", project], {
      CLAUDE_CONFIG_DIR: config,
    });
    expect(pulled.code, pulled.errors).toBe(0);
    expect(pulled.answer.subagents).toHaveLength(1);
    expect(pulled.answer.subagents[0]).toContain(join(sessionId, "subagents", "agent-"));

    const previous = process.env.CLAUDE_CONFIG_DIR;
    process.env.CLAUDE_CONFIG_DIR = config;
    try {
      const agents = await listSubagents(sessionId, { dir: project });
      expect(agents).toHaveLength(1);
      const messages = await getSubagentMessages(sessionId, agents[0] as string, { dir: project });
      expect(messages.length).toBeGreaterThan(0);
      expect(messages.every((message) => message.type === "user" || message.type === "assistant")).toBe(true);
    } finally {
      if (previous === undefined) delete process.env.CLAUDE_CONFIG_DIR;
      else process.env.CLAUDE_CONFIG_DIR = previous;
    }
  });

  it("refuses to overwrite a subagent's transcript Claude Code added to since, writing nothing, unless forced", async () => {
    const client = createClient({ baseUrl: server.url });
    const parent = await client.create({ id: crypto.randomUUID() });
    await parent.appendMessage({ role: "user", content: "look into it", timestamp: 1 });
    const sub = await client.create({
      id: `${parent.id}-agent-1`,
      metadata: { claudeCode: { agentId: "a1b2c3" } },
    });
    await sub.appendMessage({ role: "user", content: "look at a.txt", timestamp: 1 });
    const args = [parent.id, "--to", "claude-code", "--project", join(home, "work", "subagent-kept")];
    const env = { CLAUDE_CONFIG_DIR: join(home, "claude-subagent-kept") };
    const first = await pull(args, env);
    expect(first.code, first.errors).toBe(0);
    const [transcript] = first.answer.subagents as string[];
    // Pulled again with nothing new on either side.
    expect((await pull(args, env)).code).toBe(0);

    const pulled = readFileSync(transcript as string, "utf8");
    const last = JSON.parse(pulled.trimEnd().split("\n").at(-1) as string);
    const added = `${pulled}${JSON.stringify({
      ...last,
      parentUuid: last.uuid,
      uuid: crypto.randomUUID(),
      message: { role: "user", content: "and b.txt, not synced" },
    })}\n`;
    writeFileSync(transcript as string, added);
    await parent.appendMessage({ role: "user", content: "asked later", timestamp: 2 });
    const mainBefore = readFileSync(first.answer.path, "utf8");
    const refused = await pull(args, env);
    expect(refused.code).toBe(1);
    expect(refused.errors).toContain(`cf-sessions: ${transcript} holds lines the session does not`);
    expect(readFileSync(transcript as string, "utf8")).toBe(added);
    expect(readFileSync(first.answer.path, "utf8")).toBe(mainBefore);

    const forced = await pull([...args, "--force"], env);
    expect(forced.code, forced.errors).toBe(0);
    expect(readFileSync(transcript as string, "utf8")).toBe(pulled);
    expect(readFileSync(first.answer.path, "utf8")).toContain("asked later");
  });

  it("names a resumed Claude Code session's file after the session it became, not the one it continued", async () => {
    const fixture = readFileSync(
      join(import.meta.dirname, "../fixtures/claude-code/1.0.98-parallel-tools.jsonl"),
      "utf8",
    );
    const [continued, resumed] = [crypto.randomUUID(), crypto.randomUUID()];
    // A resumed conversation's file: the lines of the one it continued first, with that one's id.
    const lines = fixture
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line, index) =>
        line.replaceAll("1af7fc5e-8455-4414-9ccd-011d40f70b2a", index < 10 ? continued : resumed),
      );
    const files = mkdtempSync(join(home, "cc-resumed-"));
    writeFileSync(join(files, `${resumed}.jsonl`), `${lines.join("\n")}\n`);
    const errors: string[] = [];
    const output: Output = {
      out: () => undefined,
      write: () => undefined,
      stream: async () => undefined,
      err: (t) => errors.push(t),
      isTTY: false,
    };
    const imported = await main(["import", files, "--format", "claude-code", "--progress", "none"], output, {
      CF_SESSIONS_URL: server.url,
    });
    expect(imported, errors.join("")).toBe(0);

    const config = join(home, "claude-resumed");
    const project = join(home, "work", "Resumed");
    const pulled = await pull([`claude-code-${resumed}`, "--to", "claude-code", "--project", project], {
      CLAUDE_CONFIG_DIR: config,
    });
    expect(pulled.code, pulled.errors).toBe(0);
    expect(pulled.answer.path).toBe(
      join(claudeProjectDir(project, { CLAUDE_CONFIG_DIR: config }), `${resumed}.jsonl`),
    );
    const previous = process.env.CLAUDE_CONFIG_DIR;
    process.env.CLAUDE_CONFIG_DIR = config;
    try {
      const listed = await listSessions({ dir: project });
      expect(listed.map((session) => session.sessionId)).toEqual([resumed]);
      expect((await getSessionMessages(resumed, { dir: project })).length).toBeGreaterThan(0);
    } finally {
      if (previous === undefined) delete process.env.CLAUDE_CONFIG_DIR;
      else process.env.CLAUDE_CONFIG_DIR = previous;
    }
  });

  it("puts a session where pi and Codex keep theirs, each read back as the same conversation", async () => {
    const id = await writtenOverHttp();
    const project = join(home, "work", "other");
    const piDir = join(home, "pi");
    const piPulled = await pull([id, "--to", "pi", "--project", project], { PI_CODING_AGENT_DIR: piDir });
    expect(piPulled.code, piPulled.errors).toBe(0);
    const sessions = join(piDir, "sessions", `--${project.slice(1).replaceAll("/", "-")}--`);
    expect(readdirSync(sessions)).toHaveLength(1);
    const pi = SessionManager.open(piPulled.answer.path);
    expect(pi.getCwd()).toBe(project);
    const context = pi.buildSessionContext();
    expect(context.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);

    const codexHome = join(home, "codex");
    const codexPulled = await pull([id, "--to", "codex", "--project", project], { CODEX_HOME: codexHome });
    expect(codexPulled.code, codexPulled.errors).toBe(0);
    expect(codexPulled.answer.path).toMatch(
      /\/sessions\/\d{4}\/\d{2}\/\d{2}\/rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-[0-9a-f-]{36}\.jsonl$/,
    );
    const rollout = parseImport("codex", readFileSync(codexPulled.answer.path, "utf8"));
    const said = rollout.entries.flatMap((entry) => (entry.type === "message" ? [entry.message.role] : []));
    expect(said).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(rollout.header.metadata?.codex).toMatchObject({ cwd: project });
  });

  it("names a new Codex rollout in local time as Codex does, and goes on in the one Codex has of the thread", async () => {
    const zone = process.env.TZ;
    process.env.TZ = "Asia/Tokyo";
    try {
      expect(new Date(0).getTimezoneOffset()).toBe(-9 * 60);
      const client = createClient({ baseUrl: server.url });
      const id = await writtenOverHttp();
      const project = join(home, "work", "codex-local");
      const env = { CODEX_HOME: join(home, "codex-local") };
      const first = await pull([id, "--to", "codex", "--project", project], env);
      expect(first.code, first.errors).toBe(0);
      const meta = JSON.parse(readFileSync(first.answer.path, "utf8").split("\n")[0] as string).payload;
      // Tokyo is nine hours ahead of UTC, all year.
      const local = new Date(Date.parse(meta.timestamp) + 9 * 3600_000).toISOString();
      const [date, clock] = local.slice(0, 19).split("T") as [string, string];
      expect(first.answer.path).toBe(
        join(
          env.CODEX_HOME,
          "sessions",
          ...date.split("-"),
          `rollout-${date}T${clock.replaceAll(":", "-")}-${meta.id}.jsonl`,
        ),
      );

      // The thread's rollout, named as Codex named it elsewhere, which the agent went on in.
      const sessions = join(env.CODEX_HOME, "sessions");
      const codexOwn = join(sessions, "2001", "02", "03", `rollout-2001-02-03T04-05-06-${meta.id}.jsonl`);
      mkdirSync(join(codexOwn, ".."), { recursive: true });
      const pulled = readFileSync(first.answer.path, "utf8");
      rmSync(first.answer.path);
      const wentOn = `${pulled}${JSON.stringify({
        timestamp: meta.timestamp,
        type: "response_item",
        payload: { type: "message", role: "user", content: [{ type: "input_text", text: "not synced" }] },
      })}\n`;
      writeFileSync(codexOwn, wentOn);
      const rollouts = () =>
        readdirSync(sessions, { recursive: true }).filter((name) => String(name).endsWith(".jsonl"));
      const refused = await pull([id, "--to", "codex", "--project", project], env);
      expect(refused.code).toBe(1);
      expect(refused.errors).toContain(`cf-sessions: ${codexOwn} holds lines the session does not`);
      expect(readFileSync(codexOwn, "utf8")).toBe(wentOn);
      expect(rollouts()).toHaveLength(1);

      // Holding nothing new, it is replaced where it is, once the session went on.
      writeFileSync(codexOwn, pulled);
      await (await client.open(id)).appendMessage({ role: "user", content: "asked later", timestamp: 5 });
      const again = await pull([id, "--to", "codex", "--project", project], env);
      expect(again.code, again.errors).toBe(0);
      expect(again.answer.path).toBe(codexOwn);
      expect(readFileSync(codexOwn, "utf8")).toContain("asked later");
      expect(rollouts()).toHaveLength(1);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it("records the local Codex provider in a pulled rollout, so codex resume lists it", async () => {
    const id = await writtenOverHttp();
    const project = join(home, "work", "codex-provider");
    const meta = (path: string) =>
      JSON.parse(readFileSync(path, "utf8").split("\n")[0] as string).payload as Record<string, unknown>;

    // Codex's default provider, where config.toml names none.
    const plain = await pull([id, "--to", "codex", "--project", project], {
      CODEX_HOME: join(home, "codex-a"),
    });
    expect(plain.code, plain.errors).toBe(0);
    expect(meta(plain.answer.path).model_provider).toBe("openai");

    const configured = join(home, "codex-b");
    mkdirSync(configured, { recursive: true });
    writeFileSync(
      join(configured, "config.toml"),
      'model = "gpt-oss"\nmodel_provider = "ollama" # local\n\n[profiles.work]\nmodel_provider = "azure"\n',
    );
    const local = await pull([id, "--to", "codex", "--project", project], { CODEX_HOME: configured });
    expect(local.code, local.errors).toBe(0);
    expect(meta(local.answer.path).model_provider).toBe("ollama");

    // The export itself keeps the provider the session's model came from.
    const exported: string[] = [];
    for await (const text of createClient({ baseUrl: server.url }).storage(id).exportLines("codex"))
      exported.push(text);
    expect(JSON.parse(exported.join("").split("\n")[0] as string).payload.model_provider).toBe("anthropic");
  });

  it("refuses a Codex config.toml Codex itself refuses, writing nothing", async () => {
    const id = await writtenOverHttp();
    const project = join(home, "work", "codex-bad-toml");
    const codexHome = mkdtempSync(join(home, "codex-bad-toml-"));
    const path = join(codexHome, "config.toml");
    writeFileSync(path, 'model = "o4"\n\nmodel_provider = "ollama\n');
    const pulled = await pull([id, "--to", "codex", "--project", project], { CODEX_HOME: codexHome });
    expect(pulled.code).toBe(2);
    expect(pulled.answer).toBeUndefined();
    expect(pulled.errors).toContain(`cf-sessions: ${path} is not valid TOML: line 3, column`);
    expect(readdirSync(codexHome)).toEqual(["config.toml"]);
  });

  it("syncs a pulled Claude Code or Codex file back after the agent went on, at the local checkout", async () => {
    const { errors, output, env, sync } = inProcessCli();
    for (const agent of AGENT_FIXTURES) {
      const { format } = agent;
      const session = await importedFixture(agent, "back", output, env);

      const project = join(home, "work", `back-${format}`);
      const agentEnv = { CLAUDE_CONFIG_DIR: join(home, "claude-back"), CODEX_HOME: join(home, "codex-back") };
      const pulled = await pull([session.id, "--to", format, "--project", project], agentEnv);
      expect(pulled.code, pulled.errors).toBe(0);
      const written = readFileSync(pulled.answer.path, "utf8");
      expect(written).toContain(JSON.stringify(project));
      const last = JSON.parse(written.trimEnd().split("\n").at(-1) as string);
      const asked = "asked after the pull";
      const added =
        format === "codex"
          ? {
              timestamp: last.timestamp,
              type: "response_item",
              payload: { type: "message", role: "user", content: [{ type: "input_text", text: asked }] },
            }
          : {
              ...last,
              parentUuid: last.uuid,
              uuid: crypto.randomUUID(),
              type: "user",
              message: { role: "user", content: asked },
            };
      writeFileSync(pulled.answer.path, `${written}${JSON.stringify(added)}\n`);

      expect(await sync(pulled.answer.path as string, format), errors.join("")).toBe(0);
      expect(JSON.stringify((await session.buildContext()).messages.at(-1))).toContain(asked);
    }
  });

  it("syncs a pulled file back when the session went on elsewhere before the pull: a note, a message over HTTP", async () => {
    const { errors, output, env, sync } = inProcessCli();
    for (const agent of AGENT_FIXTURES) {
      const { format } = agent;
      const session = await importedFixture(agent, "elsewhere", output, env);
      // What MCP's append_note writes, and a question over HTTP.
      const note = await session.appendCustomMessageEntry({
        customType: "note",
        content: "check the flaky test",
        display: true,
      });
      const asked = await session.appendMessage({
        role: "user",
        content: "asked on the service",
        timestamp: 1,
      });

      const agentEnv = {
        CLAUDE_CONFIG_DIR: join(home, "claude-elsewhere"),
        CODEX_HOME: join(home, "codex-elsewhere"),
      };
      const project = join(home, "work", `elsewhere-${format}`);
      const pulled = await pull([session.id, "--to", format, "--project", project], agentEnv);
      expect(pulled.code, pulled.errors).toBe(0);
      const path = pulled.answer.path as string;
      const written = readFileSync(path, "utf8");
      // As pulled, the file holds nothing the session does not.
      expect(await sync(path, format), errors.join("")).toBe(0);

      const last = JSON.parse(written.trimEnd().split("\n").at(-1) as string);
      const said = "asked after the pull";
      const added =
        format === "codex"
          ? {
              timestamp: new Date().toISOString(),
              type: "response_item",
              payload: { type: "message", role: "user", content: [{ type: "input_text", text: said }] },
            }
          : {
              ...last,
              isMeta: undefined,
              parentUuid: last.uuid,
              uuid: crypto.randomUUID(),
              type: "user",
              message: { role: "user", content: said },
            };
      writeFileSync(path, `${written}${JSON.stringify(added)}\n`);
      expect(await sync(path, format), errors.join("")).toBe(0);
      const branch = await session.getBranch();
      expect(branch.map((entry) => entry.id)).toContain(note);
      expect(branch.at(-1)?.parentId).toBe(asked);
      expect(JSON.stringify((await session.buildContext()).messages.at(-1))).toContain(said);
      // Synced again: nothing more.
      const before = await session.getEntries({ limit: 1000 });
      expect(await sync(path, format), errors.join("")).toBe(0);
      expect(await session.getEntries({ limit: 1000 })).toEqual(before);

      // A line the export wrote for the session's own question, changed in the file: a conflict.
      const changed = readFileSync(path, "utf8").replace("asked on the service", "asked something else");
      writeFileSync(path, `${changed}${JSON.stringify({ ...added, uuid: crypto.randomUUID() })}\n`);
      expect(await sync(path, format)).toBe(1);
      expect(await session.getEntries({ limit: 1000 })).toEqual(before);
    }
  });

  it("syncs a file pulled after the session's head was moved back: the agent's lines go under the head", async () => {
    const { errors, output, env, sync } = inProcessCli();
    for (const agent of AGENT_FIXTURES) {
      const { format } = agent;
      const session = await importedFixture(agent, "moved-back", output, env);
      const first = await session.appendMessage({
        role: "user",
        content: "asked on the service 1",
        timestamp: 1,
      });
      await session.appendMessage({
        role: "user",
        content: "asked on the service 2",
        timestamp: 2,
      });
      const project = join(home, "work", `moved-back-${format}`);
      /** Pulls the session into a folder of the agent's of its own, and has the agent go on there. */
      const wentOn = async (folder: string, said: string) => {
        const agentEnv = { CLAUDE_CONFIG_DIR: join(home, folder), CODEX_HOME: join(home, folder) };
        const pulled = await pull([session.id, "--to", format, "--project", project], agentEnv);
        expect(pulled.code, pulled.errors).toBe(0);
        const path = pulled.answer.path as string;
        const written = readFileSync(path, "utf8");
        const head = await session.getLeafId();
        const headLine = written
          .trimEnd()
          .split("\n")
          .map((text) => JSON.parse(text))
          .find((line) => line.uuid === head);
        const added =
          format === "codex"
            ? {
                timestamp: new Date().toISOString(),
                type: "response_item",
                payload: { type: "message", role: "user", content: [{ type: "input_text", text: said }] },
              }
            : {
                ...headLine,
                parentUuid: head,
                uuid: crypto.randomUUID(),
                message: { role: "user", content: said },
              };
        return { path, written, grown: `${written}${JSON.stringify(added)}\n` };
      };
      // A rollout pulled before the head moved records the head it was pulled at.
      const before =
        format === "codex" ? await wentOn(`${format}-before-move`, "asked before the move") : undefined;
      await session.setLeafId(first);
      const after = await wentOn(`${format}-after-move`, "asked after the move");
      // As pulled, the file holds nothing new; gone on in, its line goes under the head, once.
      expect(await sync(after.path, format), errors.join("")).toBe(0);
      writeFileSync(after.path, after.grown);
      expect(await sync(after.path, format), errors.join("")).toBe(0);
      const entries = await session.getEntries({ limit: 1000 });
      expect(await session.getEntry((await session.getLeafId()) as string)).toMatchObject({
        parentId: first,
      });
      expect(JSON.stringify((await session.buildContext()).messages.at(-1))).toContain(
        "asked after the move",
      );
      expect(await sync(after.path, format), errors.join("")).toBe(0);
      expect(await session.getEntries({ limit: 1000 })).toEqual(entries);
      if (before) {
        // Pulled before the move, and gone on in after the other file went on from the head: the
        // session went on past where it was pulled, so it conflicts, as a transcript would.
        writeFileSync(before.path, before.grown);
        expect(await sync(before.path, format)).toBe(1);
        expect(errors.join("")).toMatch(/^conflict: /m);
        expect(await session.getEntries({ limit: 1000 })).toEqual(entries);
        errors.length = 0;
      }
      const said = JSON.stringify(await session.getEntries({ limit: 1000 }));
      expect(said.split("asked on the service 2").length - 1, format).toBe(1);
    }
  });

  it("syncs a pulled Codex rollout back when this machine's Codex runs another provider", async () => {
    const text = readFileSync(join(import.meta.dirname, "../fixtures/codex/0.135.0-redacted.jsonl"), "utf8");
    const sourceId = JSON.parse(text.split("\n")[0] as string).payload.id as string;
    const id = crypto.randomUUID();
    const files = mkdtempSync(join(home, "codex-provider-back-"));
    writeFileSync(join(files, `${id}.jsonl`), text.replaceAll(sourceId, id));
    const errors: string[] = [];
    const output: Output = {
      out: () => undefined,
      write: () => undefined,
      stream: async () => undefined,
      err: (line) => errors.push(line),
      isTTY: false,
    };
    const env = { CF_SESSIONS_URL: server.url };
    expect(await main(["import", files, "--format", "codex", "--progress", "none"], output, env)).toBe(0);
    const session = await createClient({ baseUrl: server.url }).open(`codex-${id}`);
    const before = await session.getBranch();

    const codexHome = join(home, "codex-ollama-back");
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(join(codexHome, "config.toml"), 'model_provider = "ollama"\n');
    const project = join(home, "work", "codex-ollama-back");
    const pulled = await pull([session.id, "--to", "codex", "--project", project], { CODEX_HOME: codexHome });
    expect(pulled.code, pulled.errors).toBe(0);
    const written = readFileSync(pulled.answer.path, "utf8");
    expect(JSON.parse(written.split("\n")[0] as string).payload.model_provider).toBe("ollama");
    const last = JSON.parse(written.trimEnd().split("\n").at(-1) as string);
    const asked = "asked with ollama";
    const added = {
      timestamp: last.timestamp,
      type: "response_item",
      payload: { type: "message", role: "user", content: [{ type: "input_text", text: asked }] },
    };
    writeFileSync(pulled.answer.path, `${written}${JSON.stringify(added)}\n`);

    const synced = await main(
      ["sync", pulled.answer.path, "--format", "codex", "--progress", "none"],
      output,
      env,
    );
    expect(synced, errors.join("")).toBe(0);
    const after = await session.getBranch();
    expect(after.slice(0, before.length)).toEqual(before);
    expect(JSON.stringify(after.at(-1))).toContain(asked);
  });

  it("refuses to overwrite a pulled file the agent has added to since, unless forced", async () => {
    const id = await writtenOverHttp();
    const project = join(home, "work", "kept");
    const env = { PI_CODING_AGENT_DIR: join(home, "pi-kept") };
    const first = await pull([id, "--to", "pi", "--project", project], env);
    expect(first.code, first.errors).toBe(0);
    // Pulled again with nothing new on either side: the same file.
    expect((await pull([id, "--to", "pi", "--project", project], env)).code).toBe(0);

    const pulled = readFileSync(first.answer.path, "utf8");
    const last = JSON.parse(pulled.trimEnd().split("\n").at(-1) as string);
    const added = `${pulled}${JSON.stringify({
      type: "message",
      id: "d0000001",
      parentId: last.id,
      timestamp: new Date().toISOString(),
      message: { role: "user", content: "asked here, not synced yet", timestamp: 4 },
    })}\n`;
    writeFileSync(first.answer.path, added);
    const refused = await pull([id, "--to", "pi", "--project", project], env);
    expect(refused.code).toBe(1);
    expect(refused.errors).toBe(
      `cf-sessions: ${first.answer.path} holds lines the session does not: sync it first (cf-sessions sync ${first.answer.path}), or pull --force to overwrite it\n`,
    );
    expect(readFileSync(first.answer.path, "utf8")).toBe(added);

    const forced = await pull([id, "--to", "pi", "--project", project, "--force"], env);
    expect(forced.code, forced.errors).toBe(0);
    expect(readFileSync(first.answer.path, "utf8")).toBe(pulled);
  });

  it("pulls again over a file it wrote that nothing changed since, however the session changed", async () => {
    const client = createClient({ baseUrl: server.url });
    const project = join(home, "work", "changed");
    const env = {
      CLAUDE_CONFIG_DIR: join(home, "claude-changed"),
      CODEX_HOME: join(home, "codex-changed"),
      PI_CODING_AGENT_DIR: join(home, "pi-changed"),
    };
    for (const agent of ["claude-code", "codex", "pi"] as const) {
      const session = await client.create({ id: crypto.randomUUID(), name: "first name" });
      const first = await session.appendMessage({ role: "user", content: "first", timestamp: 1 });
      const args = [session.id, "--to", agent, "--project", project];
      expect((await pull(args, env)).code).toBe(0);
      // Grown, with no record of the pull: the name line the file ends with is set aside.
      rmSync(join(home, "state"), { recursive: true, force: true });
      await session.appendMessage({ role: "user", content: "grown", timestamp: 1 });
      const grown = await pull(args, env);
      expect(grown.code, `${agent}: ${grown.errors}`).toBe(0);
      // Renamed, then grown: the file ends with the old name, which the new export does not start with.
      await session.appendSessionName("second name");
      await session.appendMessage({ role: "user", content: "second", timestamp: 2 });
      const renamed = await pull(args, env);
      expect(renamed.code, `${agent}: ${renamed.errors}`).toBe(0);
      expect(readFileSync(renamed.answer.path, "utf8")).toContain("second name");
      // The head moved back: the new export is shorter than the file.
      await session.setLeafId(first);
      const movedBack = await pull(args, env);
      expect(movedBack.code, `${agent}: ${movedBack.errors}`).toBe(0);
      // pi's file holds the whole tree; the others the branch.
      if (agent !== "pi") expect(readFileSync(movedBack.answer.path, "utf8")).not.toContain('"second"');

      // A line the agent wrote there still keeps it.
      const written = readFileSync(movedBack.answer.path, "utf8");
      const added = `${written}${JSON.stringify({ type: "agent-line", text: "not synced" })}\n`;
      writeFileSync(movedBack.answer.path, added);
      await session.appendMessage({ role: "user", content: "third", timestamp: 3 });
      const refused = await pull(args, env);
      expect(refused.code, agent).toBe(1);
      expect(readFileSync(movedBack.answer.path, "utf8")).toBe(added);
    }
  });

  it("replaces an agent's own file the session holds every line of, its head moved back on the service", async () => {
    const client = createClient({ baseUrl: server.url });
    const errors: string[] = [];
    const output: Output = {
      out: () => undefined,
      write: () => undefined,
      stream: async () => undefined,
      err: (text) => errors.push(text),
      isTTY: false,
    };
    const sync = (path: string) =>
      main(["sync", path, "--progress", "none"], output, { CF_SESSIONS_URL: server.url });

    // A pi file synced from this machine: pi's export puts the head's entry last.
    const project = join(home, "work", "moved-back");
    const piEnv = { PI_CODING_AGENT_DIR: join(home, "pi-moved-back") };
    const id = crypto.randomUUID();
    const timestamp = "2026-03-01T10:00:00.000Z";
    const piFile = join(piSessionDir(project, piEnv), `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
    const reply = (text: string) => ({
      role: "assistant",
      content: [{ type: "text", text }],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage,
      stopReason: "stop",
      timestamp: 2,
    });
    const entry = (entryId: string, parentId: string | null, message: unknown) => ({
      type: "message",
      id: entryId,
      parentId,
      timestamp,
      message,
    });
    const lines = [
      { type: "session", version: 3, id, timestamp, cwd: project },
      entry("a0000001", null, { role: "user", content: "first", timestamp: 1 }),
      entry("a0000002", "a0000001", reply("one")),
      entry("a0000003", "a0000002", { role: "user", content: "second", timestamp: 3 }),
      entry("a0000004", "a0000003", reply("two")),
    ];
    mkdirSync(join(piFile, ".."), { recursive: true });
    writeFileSync(piFile, lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
    expect(await sync(piFile), errors.join("")).toBe(0);
    await (await client.open(id)).setLeafId("a0000002");
    const pulled = await pull([id, "--to", "pi", "--project", project], piEnv);
    expect(pulled.code, pulled.errors).toBe(0);
    expect(SessionManager.open(piFile).getLeafId()).toBe("a0000002");

    // A Codex rollout synced from this machine: the export holds the branch up to the head only.
    const text = readFileSync(join(import.meta.dirname, "../fixtures/codex/0.135.0-redacted.jsonl"), "utf8");
    const thread = crypto.randomUUID();
    const codexEnv = { CODEX_HOME: join(home, "codex-moved-back") };
    const rollout = join(
      codexEnv.CODEX_HOME,
      "sessions",
      "2026",
      "06",
      "05",
      `rollout-2026-06-05T04-58-20-${thread}.jsonl`,
    );
    mkdirSync(join(rollout, ".."), { recursive: true });
    const sourceId = JSON.parse(text.split("\n")[0] as string).payload.id as string;
    writeFileSync(rollout, text.replaceAll(sourceId, thread));
    expect(await sync(rollout), errors.join("")).toBe(0);
    const session = await client.open(`codex-${thread}`);
    const [, second] = await session.getBranch();
    await session.setLeafId(second?.id ?? null);
    const replaced = await pull([session.id, "--to", "codex", "--project", project], codexEnv);
    expect(replaced.code, replaced.errors).toBe(0);
    expect(replaced.answer.path).toBe(rollout);
    expect(readFileSync(rollout, "utf8").trimEnd().split("\n")).toHaveLength(2);
  });

  it("does not advise a sync into a session written elsewhere, which would make a session of its own", async () => {
    const id = await writtenOverHttp();
    const project = join(home, "work", "elsewhere");
    const env = { CLAUDE_CONFIG_DIR: join(home, "claude-elsewhere") };
    const first = await pull([id, "--to", "claude-code", "--project", project], env);
    expect(first.code, first.errors).toBe(0);
    const pulled = readFileSync(first.answer.path, "utf8");
    const last = JSON.parse(pulled.trimEnd().split("\n").at(-1) as string);
    const added = `${pulled}${JSON.stringify({ ...last, parentUuid: last.uuid, uuid: crypto.randomUUID() })}\n`;
    writeFileSync(first.answer.path, added);
    const refused = await pull([id, "--to", "claude-code", "--project", project], env);
    expect(refused.code).toBe(1);
    expect(refused.errors).toBe(
      `cf-sessions: ${first.answer.path} holds lines the session does not; cf-sessions sync ${first.answer.path} would write them into a session of their own (claude-code-${id}), not into ${id}: pull --force to overwrite it\n`,
    );
    expect(readFileSync(first.answer.path, "utf8")).toBe(added);
  });

  it("pulls again over its own file once the session went on, the name it gave the file aside", async () => {
    const client = createClient({ baseUrl: server.url });
    // Named at creation: the pi file ends with a session_info line the export makes for the name.
    const session = await client.create({ id: crypto.randomUUID(), name: "named at creation" });
    await session.appendMessage({ role: "user", content: "first", timestamp: 1 });
    const project = join(home, "work", "named");
    const env = { PI_CODING_AGENT_DIR: join(home, "pi-named") };
    const first = await pull([session.id, "--to", "pi", "--project", project], env);
    expect(first.code, first.errors).toBe(0);
    const last = JSON.parse(readFileSync(first.answer.path, "utf8").trimEnd().split("\n").at(-1) as string);
    expect(last).toMatchObject({ type: "session_info", name: "named at creation" });

    await session.appendMessage({ role: "user", content: "second, from elsewhere", timestamp: 2 });
    const again = await pull([session.id, "--to", "pi", "--project", project], env);
    expect(again.code, again.errors).toBe(0);
    const manager = SessionManager.open(again.answer.path);
    expect(manager.getSessionName()).toBe("named at creation");
    expect(JSON.stringify(manager.buildSessionContext().messages)).toContain("second, from elsewhere");
  });

  it("refuses a session whose recorded ids would name a file outside the agent's folder, writing nothing", async () => {
    const client = createClient({ baseUrl: server.url });
    const root = mkdtempSync(join(home, "recorded-"));
    const project = join(home, "work", "recorded");
    const message = { role: "user" as const, content: "hello", timestamp: 1 };

    const claude = await client.create({
      id: crypto.randomUUID(),
      metadata: { claudeCode: { sessionId: "../../../escaped" } },
    });
    await claude.appendMessage(message);
    const claudeEnv = { CLAUDE_CONFIG_DIR: join(root, "cfg", "claude") };
    const refusedClaude = await pull([claude.id, "--to", "claude-code", "--project", project], claudeEnv);
    expect(refusedClaude.code).toBe(2);
    expect(refusedClaude.errors).toBe(
      'cf-sessions: the export\'s Claude Code session id "../../../escaped" cannot name a file\n',
    );

    const codex = await client.create({
      id: crypto.randomUUID(),
      metadata: { codex: { id: "/../../../../escaped-codex" } },
    });
    await codex.appendMessage(message);
    const refusedCodex = await pull([codex.id, "--to", "codex", "--project", project], {
      CODEX_HOME: join(root, "cfg", "codex"),
    });
    expect(refusedCodex.code).toBe(2);
    expect(refusedCodex.errors).toBe(
      'cf-sessions: the export\'s Codex session id "/../../../../escaped-codex" cannot name a file\n',
    );
    expect(readdirSync(root)).toEqual([]);
  });

  it("refuses a subagent whose recorded id would name a file outside the agent's folder, writing nothing", async () => {
    const client = createClient({ baseUrl: server.url });
    const root = mkdtempSync(join(home, "escape-"));
    const project = join(home, "work", "escape");
    const message = { role: "user" as const, content: "hello", timestamp: 1 };
    const claudeEnv = { CLAUDE_CONFIG_DIR: join(root, "cfg", "claude") };

    // A subagent's id names its transcript's file: the session's own file is not written either.
    const parent = await client.create({ id: crypto.randomUUID() });
    await parent.appendMessage(message);
    const sub = await client.create({
      id: `${parent.id}-agent-1`,
      metadata: { claudeCode: { agentId: "../../../../../escaped-sub" } },
    });
    await sub.appendMessage(message);
    const refusedSub = await pull([parent.id, "--to", "claude-code", "--project", project], claudeEnv);
    expect(refusedSub.code).toBe(2);
    expect(refusedSub.errors).toBe(
      'cf-sessions: the subagent id "../../../../../escaped-sub" cannot name a file\n',
    );

    expect(readdirSync(root)).toEqual([]);
  });

  it("refuses what it cannot do, writing nothing", async () => {
    const config = join(home, "refused");
    expect((await pull(["no-such-session", "--to", "claude-code"], { CLAUDE_CONFIG_DIR: config })).code).toBe(
      1,
    );
    expect((await pull([crypto.randomUUID(), "--to", "cursor"], { CLAUDE_CONFIG_DIR: config })).code).toBe(2);
    expect((await pull([crypto.randomUUID()], { CLAUDE_CONFIG_DIR: config })).code).toBe(2);
    expect(existsSync(config)).toBe(false);
  });
});
