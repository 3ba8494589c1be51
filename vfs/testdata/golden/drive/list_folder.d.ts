declare namespace drive {
  /**
   * List the files and subfolders inside a folder.
   * Read-only.
   */
  function list_folder(args?: ListFolderArgs): Promise<ListFolderResult>;
  function list_folder(folder_id?: string): Promise<ListFolderResult>;
  interface ListFolderArgs {
    /** @default "root" */
    folder_id?: string;
    /** @default 100 @minimum 1 @maximum 1000 */
    page_size?: number;
    page_token?: string;
  }
  interface ListFolderResult {
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
