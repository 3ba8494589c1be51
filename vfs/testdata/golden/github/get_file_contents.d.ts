declare namespace github {
  /**
   * Read a file (decoded text) or list a directory at a branch, tag or commit.
   * Read-only.
   */
  function get_file_contents(args: GetFileContentsArgs): Promise<GetFileContentsResult>;
  function get_file_contents(owner: string, repo: string, path: string): Promise<GetFileContentsResult>;
  interface GetFileContentsArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** Path in the repository; "" for the root. */
    path: string;
    /** Branch, tag or sha; the default branch when omitted. */
    ref?: string;
  }
  type GetFileContentsResult = {
    type: "file";
    path: string;
    sha: string;
    size: number;
    encoding: "utf-8" | "base64";
    content: string;
  } | {
    type: "dir";
    path: string;
    entries: {
      name: string;
      type: "file" | "dir" | "symlink" | "submodule";
      size?: number;
    }[];
  };
}
