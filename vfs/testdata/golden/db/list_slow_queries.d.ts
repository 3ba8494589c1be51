declare namespace db {
  /**
   * List the slowest queries by mean or total time from the query statistics.
   * Read-only.
   */
  function list_slow_queries(args?: ListSlowQueriesArgs): Promise<ListSlowQueriesResult>;
  interface ListSlowQueriesArgs {
    /** @default "total_ms" */
    order_by?: "mean_ms" | "total_ms" | "calls";
    /** @default 10 @minimum 1 */
    min_calls?: number;
    /** @default 10 @minimum 1 @maximum 100 */
    limit?: number;
  }
  interface ListSlowQueriesResult {
    queries: {
      query: string;
      calls: number;
      mean_ms: number;
      total_ms: number;
      rows?: number;
    }[];
  }
}
