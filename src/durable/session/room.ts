/*
 * The room a write has: what the session may hold after it, and the signal that a write needs more
 * of the tenant's room than the session was granted (quota-checks.ts asks for it, then writes again).
 */

/**
 * The most bytes a session may hold after a write, and what sets it: its own quota, or its claim
 * on the tenant's room (`claim`: a write past it asks the ledger for more before it is refused).
 */
export interface ByteLimit {
  maxBytes: number;
  quota: "maxSessionBytes" | "claim";
  limit: number;
}

/** A write needs more of the tenant's room than the session was granted: ask, then write again. */
export class ClaimExceeded extends Error {
  constructor(
    readonly holds: number,
    readonly wants: number,
  ) {
    super("the write needs a larger claim on the tenant's quota");
  }
}
