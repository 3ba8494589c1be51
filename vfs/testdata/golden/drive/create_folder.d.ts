declare namespace drive {
  /** Create a folder, optionally inside another folder. */
  function create_folder(args: CreateFolderArgs): Promise<File>;
  function create_folder(name: string, parent_id?: string): Promise<File>;
  interface CreateFolderArgs {
    /** @minLength 1 @maxLength 255 */
    name: string;
    /** @default "root" */
    parent_id?: string;
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
