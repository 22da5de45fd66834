/*
 * Elements and the words and figures written into them. Strings only ever reach the page through
 * textContent and attributes, never as markup, so nothing an agent wrote into a session can run
 * in the viewer.
 */

type PropValue = string | number | boolean | null | undefined;
type Listener = (event: Event) => void;

/** "class", "text", "on<event>" listeners, and attributes; null, undefined and false are left out. */
export type Props = Record<string, PropValue | Listener>;
export type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  children: readonly Child[] = [],
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = String(value);
    else if (key === "text") el.textContent = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children)
    if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/** Opens a modal dialog; resolves to the value of the button that closed it ("" for Escape). */
export function showDialog(dialog: HTMLDialogElement): Promise<string> {
  dialog.returnValue = "";
  const closed = new Promise<string>((resolve) =>
    dialog.addEventListener("close", () => resolve(dialog.returnValue), { once: true }),
  );
  dialog.showModal();
  return closed;
}

const CONNECTION_TEXT = { live: "● live", reconnecting: "reconnecting…", deleted: "session deleted" };

/** A live connection's state, in the badge that shows it. */
export function showConnection(badge: HTMLElement, status: keyof typeof CONNECTION_TEXT): void {
  badge.hidden = false;
  badge.dataset.status = status;
  badge.textContent = CONNECTION_TEXT[status];
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

const numberFormat = new Intl.NumberFormat();
const timeFormat = new Intl.DateTimeFormat(undefined, {
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
});
const dateFormat = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});
const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

export function formatNumber(n: number): string {
  return numberFormat.format(n);
}

/** "1 entry", "2,000 entries". */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${numberFormat.format(n)} ${n === 1 ? singular : plural}`;
}

/** Today's times to the second (entries come fast), older ones with their day. */
export function shortTime(time: string | number): string {
  const date = new Date(time);
  if (Number.isNaN(date.getTime())) return "";
  return date.toDateString() === new Date().toDateString()
    ? timeFormat.format(date)
    : dateFormat.format(date);
}

export function fullTime(time: string | number): string {
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? String(time) : fullFormat.format(date);
}

export function ago(time: string): string {
  const seconds = Math.round((Date.now() - new Date(time).getTime()) / 1000);
  if (!Number.isFinite(seconds)) return "";
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return dateFormat.format(new Date(time));
}

export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
