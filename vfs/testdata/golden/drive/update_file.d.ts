declare namespace drive {
  /**
   * Replace a file's content or rename it; the old content stays as a revision.
   * Idempotent.
   */
  function update_file(args: UpdateFileArgs): Promise<File>;
  interface UpdateFileArgs {
    /** @minLength 1 */
    file_id: string;
    /** @minLength 1 @maxLength 255 */
    name?: string;
    content?: string;
    /** @contentEncoding base64 */
    content_base64?: string;
    starred?: boolean;
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
