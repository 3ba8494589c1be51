declare namespace db {
  /**
   * List tables and views in a schema with estimated row counts and sizes.
   * Read-only.
   */
  function list_tables(args?: ListTablesArgs): Promise<ListTablesResult>;
  interface ListTablesArgs {
    /** @default "public" */
    schema?: string;
    /** @default true */
    include_views?: boolean;
  }
  interface ListTablesResult {
    tables: {
      name: string;
      kind: "table" | "view" | "materialized_view";
      estimated_rows?: number;
      size_bytes?: number;
    }[];
  }
}
