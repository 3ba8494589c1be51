declare namespace db {
  /**
   * Show a table's columns, types, keys, indexes and foreign keys.
   * Read-only.
   */
  function describe_table(args: DescribeTableArgs): Promise<DescribeTableResult>;
  function describe_table(table: string): Promise<DescribeTableResult>;
  interface DescribeTableArgs {
    /**
     * Table name, optionally schema-qualified.
     * @pattern ^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$
     */
    table: string;
  }
  interface DescribeTableResult {
    name: string;
    columns: Column[];
    indexes?: {
      name: string;
      columns: string[];
      unique?: boolean;
    }[];
    foreign_keys?: {
      column: string;
      /** table.column */
      references: string;
    }[];
  }
  interface Column {
    name: string;
    /** SQL type as the database reports it, e.g. varchar(255). */
    type: string;
    nullable: boolean;
    default?: string | null;
    primary_key?: boolean;
  }
}
