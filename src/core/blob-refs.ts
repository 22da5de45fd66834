/*
 * Blobs: images and tool outputs large enough to be stored apart from the entry that holds them
 * (the service keeps them in R2, once per tenant, addressed by their SHA-256). In an entry as
 * stored, such a value is a reference string, `\u0000blob:<kind>:<sha256 hex>`: `b64` for an
 * image's base64 data (the blob holds the decoded bytes), `txt` for text (the blob holds its UTF-8
 * bytes). Every read gives the value back in its place, so what a client reads is what it wrote.
 * The NUL that opens a reference never starts a real image's data or a tool's output; a client
 * may write a reference to a blob its tenant holds, and a string that only looks like one is
 * refused.
 */

const PREFIX = "\u0000blob:";
const REF = /^(b64|txt):([0-9a-f]{64})$/;

/** How a blob holds its value: decoded base64 (`b64`) or UTF-8 text (`txt`). */
export type BlobKind = "b64" | "txt";

export interface BlobRef {
  kind: BlobKind;
  /** SHA-256 of the blob's bytes, in hex. */
  sha256: string;
}

export function blobRef(kind: BlobKind, sha256: string): string {
  return `${PREFIX}${kind}:${sha256}`;
}

/** The blob a string refers to, or undefined when it is a value of its own. */
export function parseBlobRef(value: string): BlobRef | undefined {
  if (!value.startsWith(PREFIX)) return undefined;
  const match = REF.exec(value.slice(PREFIX.length));
  return match ? { kind: match[1] as BlobKind, sha256: match[2] as string } : undefined;
}

/** Whether a string holds the opening of a reference anywhere (a reference, or a malformed one). */
export function mentionsBlobRef(value: string): boolean {
  return value.includes(PREFIX);
}

/** Whether any string of a JSON value, or any key, holds the opening of a reference. */
export function holdsBlobRef(value: unknown): boolean {
  if (typeof value === "string") return mentionsBlobRef(value);
  if (Array.isArray(value)) return value.some(holdsBlobRef);
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).some(([key, item]) => mentionsBlobRef(key) || holdsBlobRef(item));
  }
  return false;
}

/** A place in an entry whose value may be stored as a blob. */
export interface BlobSlot {
  /** An image's base64 data, or a tool output's text. */
  kind: "image" | "text";
  value: string;
  /** The image's media type, when it says. */
  mimeType?: string;
}

/** Gives the value a slot should hold instead, or undefined to keep it. */
export type SlotRewrite = (slot: BlobSlot) => string | undefined;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null;

function rewritePart(part: unknown, toolOutput: boolean, rewrite: SlotRewrite): unknown {
  if (!isObject(part)) return part;
  if (part.type === "image" && typeof part.data === "string") {
    const mimeType = typeof part.mimeType === "string" ? part.mimeType : undefined;
    const next = rewrite({ kind: "image", value: part.data, ...(mimeType ? { mimeType } : {}) });
    return next === undefined ? part : { ...part, data: next };
  }
  if (toolOutput && part.type === "text" && typeof part.text === "string") {
    const next = rewrite({ kind: "text", value: part.text });
    return next === undefined ? part : { ...part, text: next };
  }
  return part;
}

/** `items` mapped through `f`, or `items` itself when `f` changed none of them. */
function mapKept(items: readonly unknown[], f: (item: unknown) => unknown): readonly unknown[] {
  const next = items.map(f);
  return next.some((item, index) => item !== items[index]) ? next : items;
}

function rewriteContent(content: unknown, toolOutput: boolean, rewrite: SlotRewrite): unknown {
  return Array.isArray(content)
    ? mapKept(content, (part) => rewritePart(part, toolOutput, rewrite))
    : content;
}

function rewriteMessage(message: unknown, rewrite: SlotRewrite): unknown {
  if (!isObject(message)) return message;
  const content = rewriteContent(message.content, message.role === "toolResult", rewrite);
  return content === message.content ? message : { ...message, content };
}

/**
 * The entry with the values of its blob slots rewritten: the images of messages, custom messages
 * and a compaction's retained tail, and the text of tool results. What holds a rewritten value is
 * copied (keys in their order), the rest shared; the entry itself is returned when nothing changed.
 */
export function rewriteBlobSlots<T>(entry: T, rewrite: SlotRewrite): T {
  if (!isObject(entry)) return entry;
  switch (entry.type) {
    case "message": {
      const message = rewriteMessage(entry.message, rewrite);
      return (message === entry.message ? entry : { ...entry, message }) as T;
    }
    case "custom_message": {
      const content = rewriteContent(entry.content, false, rewrite);
      return (content === entry.content ? entry : { ...entry, content }) as T;
    }
    case "compaction": {
      if (!Array.isArray(entry.retainedTail)) return entry as T;
      const retainedTail = mapKept(entry.retainedTail, (message) => rewriteMessage(message, rewrite));
      return (retainedTail === entry.retainedTail ? entry : { ...entry, retainedTail }) as T;
    }
    default:
      return entry as T;
  }
}

/** The values of an entry's blob slots. */
export function blobSlots(entry: unknown): BlobSlot[] {
  const slots: BlobSlot[] = [];
  rewriteBlobSlots(entry, (slot) => {
    slots.push(slot);
    return undefined;
  });
  return slots;
}
