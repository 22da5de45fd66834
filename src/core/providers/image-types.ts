/*
 * The image types each model API reads. An image of a type the API refuses goes to it as a short
 * note rather than a request it answers 400. `image/jpg`, a common name for JPEG that no API
 * takes, is sent as `image/jpeg`.
 */

export const ANTHROPIC_IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;
export const GEMINI_IMAGE_TYPES = [
  "image/png",
  "image/jpeg",
  "image/webp",
  "image/heic",
  "image/heif",
] as const;

/** The type an image of `mimeType` is sent as to an API that reads `types`; none when it reads no such image. */
export function imageTypeFor<T extends string>(mimeType: string, types: readonly T[]): T | undefined {
  const named = mimeType === "image/jpg" ? "image/jpeg" : mimeType;
  return types.find((type) => type === named);
}

/** What an image of a type the API does not read becomes. */
export function unsupportedImageNote(mimeType: string): string {
  return `(image omitted: ${mimeType} is not supported)`;
}
