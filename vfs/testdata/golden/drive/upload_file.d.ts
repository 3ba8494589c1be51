declare namespace drive {
  /** Upload a new file into a folder from text or base64 content. */
  function upload_file(args: UploadFileArgs): Promise<File>;
  /** @remarks Give exactly one of: content; content_base64. */
  interface UploadFileArgs {
    /** @minLength 1 @maxLength 255 */
    name: string;
    /** @default "root" */
    folder_id?: string;
    /** @default "text/plain" */
    mime_type?: string;
    content?: string;
    /** @contentEncoding base64 */
    content_base64?: string;
    /** @default false */
    convert?: boolean;
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
