declare namespace db {
  /**
   * Run an INSERT, UPDATE or DELETE statement and return the affected row count.
   * Destructive: changes or deletes data.
   */
  function execute(args: ExecuteArgs): Promise<ExecuteResult>;
  function execute(sql: string, params?: Param[]): Promise<ExecuteResult>;
  interface ExecuteArgs {
    /** @minLength 1 @maxLength 100000 */
    sql: string;
    params?: Param[];
    /** Return the rows of a RETURNING clause. @default false */
    returning?: boolean;
    /** @default false */
    confirm?: boolean;
  }
  interface ExecuteResult {
    rows_affected: number;
    rows?: { [key: string]: unknown }[];
  }
  /** A bound query parameter. */
  type Param = string | number | boolean | null;
}
