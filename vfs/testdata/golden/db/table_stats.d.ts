declare namespace db {
  /**
   * Get a table's health: dead rows, last vacuum and analyze, index usage and bloat.
   * Read-only.
   */
  function table_stats(args: TableStatsArgs): Promise<TableStatsResult>;
  interface TableStatsArgs {
    /** @minLength 1 */
    table: string;
  }
  interface TableStatsResult {
    live_rows: number;
    dead_rows: number;
    /** @format date-time */
    last_vacuum?: string | null;
    /** @format date-time */
    last_analyze?: string | null;
    seq_scans?: number;
    index_scans?: number;
    /** @minimum 0 */
    bloat_ratio?: number;
  }
}
