declare namespace drive {
  /**
   * Read a file's content as text: documents, spreadsheets as CSV, PDFs as extracted text.
   * Read-only.
   */
  function read_file(args: ReadFileArgs): Promise<ReadFileResult>;
  function read_file(file_id: string): Promise<ReadFileResult>;
  interface ReadFileArgs {
    /** @minLength 1 */
    file_id: string;
    /** Sheet name for spreadsheets; the first sheet when omitted. */
    sheet?: string;
    /** @default 100000 @minimum 1 @maximum 1000000 */
    max_chars?: number;
  }
  interface ReadFileResult {
    name: string;
    format: "markdown" | "csv" | "text";
    content: string;
    truncated: boolean;
  }
}
