import type { PlannedWrite } from "../../core/append";
import type { StoredEntry } from "../../core/entries";
import type { StoredWrite } from "./entry-rows";

/** What a write needs of the blobs prepared for it. */
export interface PreparedBlobs {
  /** The write's inputs, references read back into values. */
  readonly inputs: readonly unknown[];
  /** Entries the inputs name that hold blobs, with their values: what a replay is compared with. */
  readonly loaded: ReadonlyMap<string, StoredEntry>;
  /** The planned writes as stored: values prepared as blobs replaced by references. */
  externalize(writes: readonly PlannedWrite[]): StoredWrite[];
}
