import type { BlobRef } from "../../core/blob-refs";
import { parseBlobRef } from "../../core/blob-refs";
import { SessionError } from "../../core/errors";
import type { BlobValue } from "./blob-codec";
import { decodeBlob } from "./blob-codec";

/*
 * A tenant's blobs in its jurisdiction's R2 bucket: `v1/<tenant key>/<kind>/<sha256>`, so the same
 * value is one object however many sessions hold it, and no two tenants share one.
 */

/** Blobs fetched at once. */
const PARALLEL = 8;

export function blobKey(tenantKey: string, ref: BlobRef): string {
  return `v1/${tenantKey}/${ref.kind}/${ref.sha256}`;
}

/** Runs `work` on each item, at most PARALLEL at a time. */
export async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
}

export class BlobStore {
  readonly #bucket: R2Bucket;
  readonly tenantKey: string;

  constructor(bucket: R2Bucket, tenantKey: string) {
    this.#bucket = bucket;
    this.tenantKey = tenantKey;
  }

  key(ref: BlobRef): string {
    return blobKey(this.tenantKey, ref);
  }

  /** Stores a value (again, harmlessly, when it is there already); R2 checks its SHA-256 on the way in. */
  async put(value: BlobValue): Promise<void> {
    await this.#bucket.put(this.key(value), value.bytes, {
      httpMetadata: { contentType: value.contentType },
      sha256: value.sha256,
    });
  }

  /**
   * The values of these references (strings as entries hold them), fetched a few at a time. A
   * blob missing from the bucket cannot be read back: `unavailable`, and nothing is answered.
   */
  async read(refs: Iterable<string>): Promise<Map<string, string>> {
    const values = new Map<string, string>();
    await inParallel([...new Set(refs)], async (text) => {
      const ref = parseBlobRef(text);
      if (!ref) return;
      const object = await this.#bucket.get(this.key(ref));
      if (!object) {
        throw new SessionError("unavailable", "a blob this session holds cannot be read from its bucket", {
          blob: `${ref.kind}:${ref.sha256}`,
        });
      }
      values.set(text, decodeBlob(ref.kind, new Uint8Array(await object.arrayBuffer())));
    });
    return values;
  }
}
