import type { Result } from "../core/errors";
import { unwrap } from "../core/errors";

/*
 * How the Worker and the objects call an object: each method of its class that answers a `Result`
 * (an error crosses RPC as data, not as a thrown value) is called through the object's stub, and
 * answers the value, or throws the error again as the `SessionError` it was. The calls are typed by
 * the object's class itself, so a call reads as the method it reaches, whatever RPC's own types
 * make of what crosses.
 */

/** The methods of the object class `T` that answer a `Result`, each answering its value. */
export type ObjectCalls<T> = {
  [K in keyof T as T[K] extends (...args: never) => Promise<Result<unknown>> ? K : never]: T[K] extends (
    ...args: infer A
  ) => Promise<Result<infer R>>
    ? (...args: A) => Promise<R>
    : never;
};

/** The calls of the object behind `stub` (see the file's comment); its other methods are the stub's. */
export function objectCalls<T extends Rpc.DurableObjectBranded>(stub: DurableObjectStub<T>): ObjectCalls<T> {
  const methods = stub as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  return new Proxy({} as ObjectCalls<T>, {
    get(_calls, name) {
      // Not a promise: awaiting the calls themselves does not call the object.
      if (typeof name !== "string" || name === "then") return undefined;
      return async (...args: unknown[]) => unwrap((await methods[name]?.(...args)) as Result<unknown>);
    },
  });
}
