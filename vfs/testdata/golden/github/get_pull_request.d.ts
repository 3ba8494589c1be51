declare namespace github {
  /**
   * Get one pull request with its branches, diff stats and mergeability.
   * Read-only.
   */
  function get_pull_request(args: GetPullRequestArgs): Promise<PullRequest>;
  function get_pull_request(owner: string, repo: string, pull_number: number): Promise<PullRequest>;
  interface GetPullRequestArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @minimum 1 */
    pull_number: number;
  }
  interface PullRequest {
    /** @minimum 1 */
    number: number;
    title: string;
    state: "open" | "closed";
    draft?: boolean;
    merged?: boolean;
    /** Source branch. */
    head: string;
    /** Target branch. */
    base: string;
    user: User;
    additions?: number;
    deletions?: number;
    changed_files?: number;
    /** Null while GitHub is still computing it. */
    mergeable?: boolean | null;
    /** @format uri */
    html_url: string;
  }
  /** A GitHub account. */
  interface User {
    /** Account name. */
    login: string;
    id: number;
    type?: "User" | "Organization" | "Bot";
  }
}
