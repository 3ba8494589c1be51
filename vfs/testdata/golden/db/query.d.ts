declare namespace db {
  /**
   * Run a read-only SQL SELECT with bound parameters and get rows as objects.
   * Read-only.
   */
  function query(args: QueryArgs): Promise<QueryResult>;
  function query(sql: string, params?: Param[]): Promise<QueryResult>;
  interface QueryArgs {
    /** @minLength 1 @maxLength 100000 */
    sql: string;
    /** @maxItems 100 */
    params?: Param[];
    /** @default 1000 @minimum 1 @maximum 10000 */
    max_rows?: number;
    /** @default 10000 @minimum 100 @maximum 60000 */
    timeout_ms?: number;
  }
  interface QueryResult {
    columns: string[];
    rows: { [key: string]: unknown }[];
    row_count: number;
    truncated: boolean;
  }
  /** A bound query parameter. */
  type Param = string | number | boolean | null;
}
