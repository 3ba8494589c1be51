declare namespace github {
  /**
   * Commit a new or changed file to a branch in one step.
   * Destructive: changes or deletes data.
   */
  function create_or_update_file(args: CreateOrUpdateFileArgs): Promise<CreateOrUpdateFileResult>;
  interface CreateOrUpdateFileArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @minLength 1 */
    path: string;
    /** New file content as UTF-8 text. */
    content: string;
    /** Commit message. @minLength 1 */
    message: string;
    /** Branch to commit to; the default branch when omitted. */
    branch?: string;
    /** Blob sha of the file being replaced; required to update. @pattern ^[0-9a-f]{40}$ */
    sha?: string;
  }
  interface CreateOrUpdateFileResult {
    commit: Commit;
    content_sha: string;
  }
  interface Commit {
    /** @pattern ^[0-9a-f]{40}$ */
    sha: string;
    message: string;
    author: {
      name: string;
      /** @format email */
      email?: string;
      /** @format date-time */
      date: string;
    };
  }
}
