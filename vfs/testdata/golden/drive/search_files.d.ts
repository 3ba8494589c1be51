declare namespace drive {
  /**
   * Find files and folders by name, full text, type, owner, folder or modified date.
   * Read-only.
   */
  function search_files(args?: SearchFilesArgs): Promise<SearchFilesResult>;
  interface SearchFilesArgs {
    /** Words to find in names and contents. */
    text?: string;
    name_contains?: string;
    /** E.g. application/pdf, or application/vnd.folder for folders. */
    mime_type?: string;
    /** Folder id. */
    in_folder?: string;
    /** @format email */
    owner?: string;
    /** @format date-time */
    modified_after?: string;
    /** @default false */
    include_trashed?: boolean;
    /** @default "relevance" */
    order_by?: "modified_time desc" | "name" | "relevance";
    /** @default 100 @minimum 1 @maximum 1000 */
    page_size?: number;
    page_token?: string;
  }
  interface SearchFilesResult {
    files: File[];
    next_page_token?: string | null;
  }
  interface File {
    id: string;
    name: string;
    mime_type: string;
    /** Bytes; null for native documents and folders. */
    size?: number | null;
    parents?: string[];
    /** @format email */
    owner?: string;
    /** @format date-time */
    modified_time?: string;
    /** @format uri */
    web_url?: string;
    starred?: boolean;
    trashed?: boolean;
  }
}
