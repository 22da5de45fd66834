import type { Sql } from "../sql";
import type { CopyState } from "./copy-state";
import type { EntryRows } from "./entry-rows";
import type { HeadContext } from "./head-context";
import type { LeafHistory } from "./leaf-history";
import type { PathReads } from "./path-reads";
import type { SearchIndex } from "./search-index";
import type { SessionRow } from "./session-row";

/*
 * What the store's reads, contexts and writes share of one session's storage: the session row
 * (its state in memory), the tables' readers and writers, the head's context kept in memory, and
 * in a fork still copying its path, where the copy stands.
 */

export interface StoreParts {
  storage: DurableObjectStorage;
  sql: Sql;
  row: SessionRow;
  rows: EntryRows;
  paths: PathReads;
  search: SearchIndex;
  history: LeafHistory;
  head: HeadContext;
  copy: CopyState;
}
