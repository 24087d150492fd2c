// Keyset paging, as every list of the store takes it.

/** A keyset page request: rows strictly after `after`, in the store's total order. */
export interface PageQuery<Position> {
  after: Position | null;
  limit: number;
}
