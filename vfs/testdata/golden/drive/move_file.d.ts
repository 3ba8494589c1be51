declare namespace drive {
  /**
   * Move a file or folder to another folder.
   * Idempotent.
   */
  function move_file(args: MoveFileArgs): Promise<File>;
  interface MoveFileArgs {
    /** @minLength 1 */
    file_id: string;
    /** @minLength 1 */
    to_folder_id: string;
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
