declare namespace drive {
  /**
   * Move a file or folder to the trash, or delete it permanently.
   * Destructive: changes or deletes data. Idempotent.
   */
  function delete_file(args: DeleteFileArgs): Promise<DeleteFileResult>;
  interface DeleteFileArgs {
    /** @minLength 1 */
    file_id: string;
    /** @default false */
    permanent?: boolean;
  }
  interface DeleteFileResult {
    deleted: string;
    permanent: boolean;
  }
}
