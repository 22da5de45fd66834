import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { SessionEntry } from "../../src/core/entries";
import { SessionError } from "../../src/core/errors";
import { ftsQuery } from "../../src/core/search-query";
import {
  entrySearchText,
  MAX_INDEXED_CHARS,
  MAX_SNIPPET_CHARS,
  readSnippet,
} from "../../src/core/search-text";

/*
 * The pure parts of search: the query a person types turned into an FTS5 expression that always
 * parses, what each entry contributes to the index, and snippets read back as text and offsets.
 * That SQLite accepts every expression is checked in workerd (test/workers/http-search.test.ts).
 */

function refused(query: string): SessionError {
  try {
    ftsQuery(query);
  } catch (error) {
    expect(error).toBeInstanceOf(SessionError);
    return error as SessionError;
  }
  throw new Error(`${JSON.stringify(query)} was accepted`);
}

describe("search queries", () => {
  it("quotes every word, so FTS5 syntax in the input is only text", () => {
    expect(ftsQuery("hello world")).toBe('"hello" AND "world"');
    expect(ftsQuery('say "hi there" now')).toBe('"say" AND "hi there" AND "now"');
    expect(ftsQuery("deploy*")).toBe('"deploy" *');
    expect(ftsQuery('"red rock"*')).toBe('"red rock" *');
    expect(ftsQuery("kafka OR rabbitmq")).toBe('("kafka" OR "rabbitmq")');
    expect(ftsQuery("a b OR c d")).toBe('"a" AND ("b" OR "c") AND "d"');
    expect(ftsQuery("deploy -draft -wip")).toBe('("deploy") NOT ("draft" OR "wip")');
    expect(ftsQuery("NEAR(a b) AND col:x")).toBe('"NEAR(a" AND "b)" AND "AND" AND "col:x"');
    expect(ftsQuery('it"s')).toBe('"it" AND "s"');
    expect(ftsQuery('"unclosed phrase')).toBe('"unclosed phrase"');
    // OR joins the terms on either side; anywhere else it is left out.
    expect(ftsQuery("or OR")).toBe('"or"');
    expect(ftsQuery("OR x")).toBe('"x"');
    expect(ftsQuery("x", ["text"])).toBe('{text} : ("x")');
    // Quotes inside a word are doubled, as FTS5 strings need.
    expect(ftsQuery('don""t')).toBe('"don" AND "t"');
    expect(ftsQuery("a\u0000b")).toBe('"a" AND "b"');
  });

  it("refuses a query with nothing to find, or too long, with a message that says so", () => {
    expect(refused("").message).toMatch(/empty/);
    expect(refused("   ").message).toMatch(/empty/);
    expect(refused("!!! ???").message).toMatch(/no word to search for/);
    expect(refused("-draft").message).toMatch(/no word to search for/);
    expect(refused('"" * -').message).toMatch(/no word/);
    expect(refused("x".repeat(501)).message).toMatch(/longer than 500/);
    expect(refused(Array.from({ length: 33 }, (_, i) => `w${i}`).join(" ")).message).toMatch(/at most 32/);
    for (const query of ["", "!!!", "x".repeat(501)]) expect(refused(query).code).toBe("invalid_request");
  });

  it("turns any input into quoted strings and operators only, or refuses it", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: "grapheme", maxLength: 30 })),
        (query) => {
          let expression: string;
          try {
            expression = ftsQuery(query);
          } catch (error) {
            expect(error).toBeInstanceOf(SessionError);
            expect((error as SessionError).code).toBe("invalid_request");
            return;
          }
          // Outside quoted strings only operators, parentheses and the prefix star remain.
          const outside = expression.replace(/"(?:[^"]|"")*"/g, "");
          expect(outside).toMatch(/^(?:\s|AND|OR|NOT|\(|\)|\*)*$/);
          expect([...expression].some((char) => char.charCodeAt(0) < 0x20)).toBe(false);
        },
      ),
      { seed: 20261202, numRuns: 2000 },
    );
  });
});

const entry = (fields: Record<string, unknown>) =>
  ({ id: "e", parentId: null, timestamp: "2026-01-01T00:00:00.000Z", ...fields }) as unknown as SessionEntry;

describe("entry text", () => {
  it("takes what was said, apart from thinking, and summaries, labels and names", () => {
    expect(
      entrySearchText(entry({ type: "message", message: { role: "user", content: "hi", timestamp: 1 } })),
    ).toEqual({
      text: "hi",
      thinking: "",
    });
    const assistant = entry({
      type: "message",
      message: {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "let me think" },
          { type: "thinking", thinking: "secret", redacted: true },
          { type: "text", text: "the answer" },
          { type: "toolCall", id: "c", name: "grep", arguments: { pattern: "x" } },
        ],
      },
    });
    expect(entrySearchText(assistant)).toEqual({ text: "the answer", thinking: "let me think" });
    const bash = entry({
      type: "message",
      message: { role: "bashExecution", command: "ls", output: "a.txt" },
    });
    expect(entrySearchText(bash)?.text).toBe("ls\na.txt");
    expect(entrySearchText(entry({ type: "compaction", summary: "so far", tokensBefore: 1 }))?.text).toBe(
      "so far",
    );
    expect(entrySearchText(entry({ type: "label", targetId: "x", label: "keep" }))?.text).toBe("keep");
    expect(entrySearchText(entry({ type: "label", targetId: "x" }))).toBeUndefined();
    expect(entrySearchText(entry({ type: "session_info", name: "Plan" }))?.text).toBe("Plan");
    expect(entrySearchText(entry({ type: "custom", customType: "x", data: { text: "no" } }))).toBeUndefined();
    expect(entrySearchText(entry({ type: "model_change", provider: "p", modelId: "m" }))).toBeUndefined();
    const image = entry({
      type: "message",
      message: {
        role: "user",
        content: [{ type: "image", data: "AAAA", mimeType: "image/png" }],
        timestamp: 1,
      },
    });
    expect(entrySearchText(image)).toBeUndefined();
  });

  it("bounds what one entry indexes and keeps the snippet markers out of it", () => {
    const long = entrySearchText(
      entry({ type: "message", message: { role: "user", content: "x".repeat(300_000), timestamp: 1 } }),
    );
    expect(long?.text.length).toBe(MAX_INDEXED_CHARS);
    const marked = entrySearchText(
      entry({ type: "message", message: { role: "user", content: "a\u0001b\u0002c", timestamp: 1 } }),
    );
    expect(marked?.text).toBe("a b c");
  });

  it("reads snippets as text and [start, end) offsets", () => {
    expect(readSnippet("say \u0001hello\u0002 to \u0001the\u0002 world")).toEqual({
      snippet: "say hello to the world",
      highlights: [
        [4, 9],
        [13, 16],
      ],
    });
    expect(readSnippet("😀 \u0001ñandú\u0002")).toEqual({ snippet: "😀 ñandú", highlights: [[3, 8]] });
    expect(readSnippet("plain")).toEqual({ snippet: "plain", highlights: [] });
  });

  it("keeps a snippet of a long word to MAX_SNIPPET_CHARS around its first match, cut marked", () => {
    // A match inside a word of 100,000 characters: SQLite's snippet holds the whole word.
    const word = "z".repeat(100_000);
    const long = readSnippet(`before \u0001${word}\u0002 after`);
    expect(long.snippet).toBe(`before ${"z".repeat(MAX_SNIPPET_CHARS - 7)}…`);
    expect(long.highlights).toEqual([[7, MAX_SNIPPET_CHARS]]);
    // A match deep in a long text: a quarter of the window before it, the cut marked both sides.
    const deep = readSnippet(`${"a".repeat(5000)} \u0001needle\u0002 ${"b".repeat(5000)}`);
    expect(deep.snippet.length).toBe(MAX_SNIPPET_CHARS + 2);
    expect(deep.snippet.startsWith("…")).toBe(true);
    expect(deep.snippet.endsWith("…")).toBe(true);
    const [[from, to]] = deep.highlights as [[number, number]];
    expect(deep.snippet.slice(from, to)).toBe("needle");
    expect(from).toBe(1 + MAX_SNIPPET_CHARS / 4);
    // Near the end: the window ends with the text; a character is never halved.
    const emoji = readSnippet(`${"😀".repeat(2000)}\u0001x\u0002`);
    expect(emoji.snippet.endsWith("x")).toBe(true);
    expect(emoji.snippet.slice(1)).toMatch(/^(?:😀)+x$/u);
    expect(emoji.snippet.slice(...(emoji.highlights[0] as [number, number]))).toBe("x");
  });
});
