declare namespace db {
  /**
   * Run a SELECT and save the full result as a CSV file in the workspace.
   * Idempotent.
   */
  function export_csv(args: ExportCsvArgs): Promise<ExportCsvResult>;
  interface ExportCsvArgs {
    /** @minLength 1 */
    sql: string;
    params?: Param[];
    /** Workspace path ending in .csv. @pattern ^[A-Za-z0-9._/-]+\.csv$ */
    path: string;
    /** @default "," */
    delimiter?: "," | ";" | "\t";
  }
  interface ExportCsvResult {
    path: string;
    rows: number;
    bytes: number;
  }
  /** A bound query parameter. */
  type Param = string | number | boolean | null;
}
