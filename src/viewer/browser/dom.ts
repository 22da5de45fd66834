/*
 * Browser code is kept as plain JavaScript in strings: the Worker serves it as is (no build
 * step), and the Workers type check has no DOM to check it against. The browser test runs it.
 * Strings only ever reach the page through textContent and attributes, never as markup, so
 * nothing an agent wrote into a session can run in the viewer.
 */

// biome-ignore lint/complexity/noUselessStringRaw: browser code, kept raw so a backslash added later reaches the page as written
export const domScript = String.raw`
/** An element with properties ("class", "text", "on<event>", attributes) and children. */
function h(tag, props, children) {
  const el = document.createElement(tag);
  if (props) {
    for (const key of Object.keys(props)) {
      const value = props[key];
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  if (children) {
    for (const child of children) {
      if (child !== null && child !== undefined && child !== false) el.append(child);
    }
  }
  return el;
}

const numberFormat = new Intl.NumberFormat();
const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const dateFormat = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

function count(n, singular, plural) {
  return numberFormat.format(n) + " " + (n === 1 ? singular : plural || singular + "s");
}

/** Today's times to the second (entries come fast), older ones with their day. */
function shortTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return date.toDateString() === new Date().toDateString() ? timeFormat.format(date) : dateFormat.format(date);
}

function fullTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : fullFormat.format(date);
}

function ago(iso) {
  const seconds = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (!Number.isFinite(seconds)) return "";
  if (seconds < 45) return "just now";
  if (seconds < 3600) return Math.round(seconds / 60) + " min ago";
  if (seconds < 86400) return Math.round(seconds / 3600) + " h ago";
  return dateFormat.format(new Date(iso));
}

function truncate(text, max) {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}
`;
