import type { StoredEntry } from "../../core/entries";
import type { EntryPlace, ShownEntries } from "../../durable/internal";
import { placeOf } from "./entry-places";
import { shownLine } from "./render";

/*
 * What of the entries around an entry one answer shows: the entry itself, then those nearest it,
 * after and before in turn, while their lines fit in what is left of the answer's text and the
 * entries (whole, else by their place) in what is left of its structured content. The entries
 * left out on a side are named by a line giving the read_entries call that shows them: centred
 * among them, with an `around` that spans them (read_entries counts `around` tree entries on each
 * side, whatever their seqs). The entry itself, shown even when it does not fit, shows the lines
 * of it that do, then a line saying how many are left out and where the entry is read whole.
 */

type Shown = ShownEntries["entries"][number];

/** What is left of an answer: characters of its text, and of its structured content's JSON. */
export interface AnswerBudget {
  text: number;
  structured: number;
}

/** The part of the entries around an entry that an answer shows. */
export interface AroundPart {
  /** The lines shown, in order, the centre's marked; then a line for each side left out. */
  lines: string[];
  /** The entries shown, in order, as the structured content carries them. */
  entries: (StoredEntry | EntryPlace)[];
  /** What the part takes of the budget. */
  used: AnswerBudget;
}

/** The line naming the read that shows the entries left out on one side. */
function leftOutLine(entryId: string, around: number, count: number, side: "earlier" | "later"): string {
  return `  more: read_entries with entryId "${entryId}" and around ${around} shows the ${count} ${side} entries left out`;
}

/** Characters the lines naming what is left out take at most, both sides. */
const LEFT_OUT_CHARS = 2 * (leftOutLine("x".repeat(128), 99, 99, "earlier").length + 1);

/** The entry's lines as shown, its own marked when it is the centre. */
function entryLines({ lines, entry }: Shown, centre: string): string[] {
  const mark = entry.id === centre ? "> " : "  ";
  return lines.map((line) => `${mark}${shownLine(entry.id, line)}`);
}

/** The line closing an entry shown in part: how many of its lines are left out, and where it is read whole. */
function cutLine({ entry }: Shown, centre: string, count: number, total: number): string {
  const mark = entry.id === centre ? "> " : "  ";
  return `${mark}[${entry.id}] … ${count} more of its ${total} lines left out, as many as one answer holds: GET /v1/sessions/<sessionId>/entries/${entry.id} reads the entry whole`;
}

/** The entry's lines, the first of them that fit in `chars` with the line closing them when they do not all fit. */
function linesWithin(shown: Shown, centre: string, chars: number): string[] {
  const lines = entryLines(shown, centre);
  if (lines.reduce((sum, line) => sum + line.length + 1, 0) <= chars) return lines;
  // The closing line is longest when every line is left out.
  let left = chars - cutLine(shown, centre, lines.length, lines.length).length - 1;
  let kept = 0;
  for (const line of lines) {
    if (line.length + 1 > left) break;
    left -= line.length + 1;
    kept++;
  }
  return [...lines.slice(0, kept), cutLine(shown, centre, lines.length - kept, lines.length)];
}

/**
 * The entry's own centre and `around` for a read_entries call showing `window[from..to]` (entries
 * in a row of the tree's): the middle one, `around` the larger of the counts on its two sides.
 */
function readOf(window: readonly Shown[], from: number, to: number): { entryId: string; around: number } {
  const middle = from + Math.floor((to - from) / 2);
  return { entryId: (window[middle] as Shown).entry.id, around: to - middle };
}

/**
 * The part of `window` (the entries around `centre`, in order) shown within `budget`, or null when
 * the centre itself does not fit and `centreAlways` is false (shown anyway when it is true).
 */
export function aroundPart(
  window: readonly Shown[],
  centre: string,
  budget: AnswerBudget,
  centreAlways: boolean,
): AroundPart | null {
  const at = window.findIndex((shown) => shown.entry.id === centre);
  if (at < 0) return null;
  const left = { text: budget.text - LEFT_OUT_CHARS, structured: budget.structured };
  const carried = new Map<number, StoredEntry | EntryPlace>();
  const shownLines = new Map<number, string[]>();
  // Takes the entry at `i` when its lines and its structured content fit (whole, else by its place);
  // `always`, its lines cut to what is left.
  const take = (i: number, always = false): boolean => {
    const shown = window[i] as Shown;
    const lines = always ? linesWithin(shown, centre, left.text) : entryLines(shown, centre);
    const text = lines.reduce((sum, line) => sum + line.length + 1, 0);
    let entry = shown.entry;
    let chars = JSON.stringify(entry).length + 1;
    if (!("omitted" in entry) && chars > left.structured) {
      entry = placeOf(entry, chars - 1);
      chars = JSON.stringify(entry).length + 1;
    }
    if (!always && (text > left.text || chars > left.structured)) return false;
    left.text -= text;
    left.structured -= chars;
    carried.set(i, entry);
    shownLines.set(i, lines);
    return true;
  };
  if (!take(at, centreAlways)) return null;
  let first = at;
  let last = at;
  let before = at > 0;
  let after = at < window.length - 1;
  while (before || after) {
    if (after) after = take(last + 1) && ++last < window.length - 1;
    if (before) before = take(first - 1) && --first > 0;
  }
  const lines = [...shownLines.entries()].sort(([a], [b]) => a - b).flatMap(([, shown]) => shown);
  if (first > 0) {
    const { entryId, around } = readOf(window, 0, first - 1);
    lines.push(leftOutLine(entryId, around, first, "earlier"));
  }
  if (last < window.length - 1) {
    const { entryId, around } = readOf(window, last + 1, window.length - 1);
    lines.push(leftOutLine(entryId, around, window.length - 1 - last, "later"));
  }
  const entries = [...carried.entries()].sort(([a], [b]) => a - b).map(([, entry]) => entry);
  return {
    lines,
    entries,
    used: {
      text: lines.join("\n").length,
      structured: budget.structured - left.structured,
    },
  };
}
