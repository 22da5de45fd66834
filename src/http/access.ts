import * as z from "zod";

/**
 * What a credential may do. A closed set: a value outside it is refused, never read as the
 * nearest thing it resembles, so a typo can not hand out more access than was meant.
 */
export const Access = z.enum(["read", "write"]);
export type Access = z.infer<typeof Access>;

/** Who is calling: a tenant, and what it may do there. */
export interface Caller {
  tenant: string;
  access: Access;
}
