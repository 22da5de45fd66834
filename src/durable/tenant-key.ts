/**
 * A key that stands for a tenant without naming it: the SHA-256 (hex) of its name. It names the
 * tenant's placement record and prefixes its blobs in R2, so neither an object name in the
 * default namespace nor a bucket listing nor a blob's URL shows who the tenant is.
 */
export async function tenantKey(tenant: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`tenant-key:${tenant}`));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
