import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { codexProvider } from "../../src/cli/codex-config";
import { UsageError } from "../../src/cli/output";

/*
 * The provider `pull --to codex` records, read from Codex's config.toml as Codex reads it: the
 * profile `profile` selects, else the top-level `model_provider`, else Codex's default; a file
 * Codex would not start with is refused.
 */

const home = mkdtempSync(join(tmpdir(), "codex-config-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** A Codex home holding `config` as its config.toml, and the path of that file. */
function codexHome(config: string): { dir: string; path: string } {
  const dir = mkdtempSync(join(home, "home-"));
  const path = join(dir, "config.toml");
  writeFileSync(path, config);
  return { dir, path };
}

const provider = (config: string) => codexProvider(codexHome(config).dir);

/** The message `codexProvider` refuses `config` with. */
function refusal(config: string): { message: string; path: string } {
  const { dir, path } = codexHome(config);
  try {
    codexProvider(dir);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return { message: (error as Error).message, path };
  }
  throw new Error("the config was read");
}

describe("the provider Codex's config.toml names", () => {
  it("is Codex's default without a config, or one that names none", () => {
    expect(codexProvider(mkdtempSync(join(home, "none-")))).toBe("openai");
    expect(provider('model = "o4"\n')).toBe("openai");
  });

  it("is the selected profile's, before the top-level one", () => {
    expect(
      provider(
        'model_provider = "azure"\nprofile = "local"\n\n[profiles.local]\nmodel_provider = "ollama"\nmodel = "gpt-oss:20b"\n',
      ),
    ).toBe("ollama");
    expect(
      provider(
        'model = "gpt-oss"\nmodel_provider = "ollama" # local\n\n[profiles.work]\nmodel_provider = "azure"\n',
      ),
    ).toBe("ollama");
    // A profile that names no provider: the top-level one, else Codex's default.
    expect(provider('model_provider = "azure"\nprofile = "fast"\n\n[profiles.fast]\nmodel = "o4"\n')).toBe(
      "azure",
    );
    expect(provider('profile = "fast"\n\n[profiles.fast]\nmodel = "o4"\n')).toBe("openai");
  });

  it("is read as TOML: strings spanning lines, inline tables, quoted and dotted profile names", () => {
    // A line inside a multi-line string is text, not a key.
    expect(
      provider(
        'model_provider = "azure"\ndeveloper_instructions = """\nWhen asked, say:\nmodel_provider = "ollama"\n"""\n',
      ),
    ).toBe("azure");
    expect(provider("model_provider = 'azure'\nnotes = '''\nmodel_provider = \"ollama\"\n'''\n")).toBe(
      "azure",
    );
    // An integer past JavaScript's safe range is a valid 64-bit TOML integer, as Codex reads it.
    expect(provider('model_context_window = 9223372036854775807\nmodel_provider = "ollama"\n')).toBe(
      "ollama",
    );
    // Profiles as inline tables.
    expect(provider('profile = "local"\nprofiles = { local = { model_provider = "ollama" } }\n')).toBe(
      "ollama",
    );
    expect(
      provider(
        'profile = "local"\n\n[profiles]\nlocal = { model = "gpt-oss:20b", model_provider = "ollama" }\n',
      ),
    ).toBe("ollama");
    // A quoted profile name, with a dot: one name, whichever way the table is written.
    expect(provider('profile = \'my.box\'\nprofiles."my.box".model_provider = "lmstudio"\n')).toBe(
      "lmstudio",
    );
    expect(provider('profile = "my-box"\n\n[profiles."my-box"]\nmodel_provider = "lmstudio"\n')).toBe(
      "lmstudio",
    );
    expect(provider('profile = "gpt-5.1"\n\n[profiles]\n"gpt-5.1" = { model_provider = "lmstudio" }\n')).toBe(
      "lmstudio",
    );
    expect(
      provider('profile = "box [gpu].1"\n\n[profiles."box [gpu].1"]\nmodel_provider = "lmstudio"\n'),
    ).toBe("lmstudio");
    expect(provider('profile = "my.box"\nprofiles.\'my.box\' = { model_provider = "lmstudio" }\n')).toBe(
      "lmstudio",
    );
  });

  it("is refused for a file Codex refuses, naming the file and the line", () => {
    // Not TOML: an unclosed string on line 3; one line, without the file's lines around the fault.
    const unclosed = refusal('model = "o4"\n\nmodel_provider = "ollama\n');
    expect(unclosed.message).toContain(`${unclosed.path} is not valid TOML: line 3, column`);
    expect(unclosed.message.split("\n")).toHaveLength(1);
    // A key given twice.
    const twice = refusal('model_provider = "azure"\nmodel_provider = "ollama"\n');
    expect(twice.message).toContain(`${twice.path} is not valid TOML: line 2, column`);
    // A profile selected that the file does not define, and a provider that is not a string.
    const missing = refusal(
      'model_provider = "azure"\nprofile = "gone"\n\n[profiles.local]\nmodel_provider = "ollama"\n',
    );
    expect(missing.message).toContain(`${missing.path} selects profile "gone"`);
    const numeric = refusal("model_provider = 1\n");
    expect(numeric.message).toContain(`${numeric.path}: model_provider is not a string`);
    const inProfile = refusal('profile = "local"\n[profiles.local]\nmodel_provider = ["ollama"]\n');
    expect(inProfile.message).toContain(`${inProfile.path}: profiles."local".model_provider is not a string`);
  });
});
