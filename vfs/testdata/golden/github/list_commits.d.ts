declare namespace github {
  /**
   * List commits on a branch or path, newest first, optionally between two dates.
   * Read-only.
   */
  function list_commits(args: ListCommitsArgs): Promise<ListCommitsResult>;
  interface ListCommitsArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** Branch, tag or commit to start from; the default branch when omitted. */
    sha?: string;
    /** Only commits touching this file or directory. */
    path?: string;
    /** Login or e-mail of the author. */
    author?: string;
    /** @format date-time */
    since?: string;
    /** @format date-time */
    until?: string;
    /** @default 30 @minimum 1 @maximum 100 */
    per_page?: number;
  }
  interface ListCommitsResult {
    commits: Commit[];
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
