/**
 * Where two byte arrays first differ (the shorter one's length when one is the other's start), or
 * -1 when they are equal. Comparing large arrays with `toEqual` walks them element by element
 * through the matcher's generic equality, seconds for a few megabytes; this compares them as
 * bytes and says where they part.
 */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.byteLength, b.byteLength);
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return i;
  return a.byteLength === b.byteLength ? -1 : length;
}
