import { sha256Hex } from "../core/bytes";

/**
 * A key that stands for a tenant without naming it: the SHA-256 (hex) of its name. It names the
 * tenant's placement record and prefixes its blobs in R2, so neither an object name in the
 * default namespace nor a bucket listing nor a blob's URL shows who the tenant is.
 */
export async function tenantKey(tenant: string): Promise<string> {
  return sha256Hex(`tenant-key:${tenant}`);
}
