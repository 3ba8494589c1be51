declare namespace db {
  /**
   * Show the query plan for a SELECT, optionally with real timings (EXPLAIN ANALYZE).
   * Read-only.
   */
  function explain(args: ExplainArgs): Promise<ExplainResult>;
  interface ExplainArgs {
    /** @minLength 1 */
    sql: string;
    params?: Param[];
    /** @default false */
    analyze?: boolean;
    /** @default "text" */
    format?: "text" | "json";
  }
  interface ExplainResult {
    plan: string;
    total_cost?: number;
    execution_ms?: number | null;
  }
  /** A bound query parameter. */
  type Param = string | number | boolean | null;
}
