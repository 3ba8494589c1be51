declare namespace github {
  /**
   * List pull requests of a repository, filtered by state, base or head branch.
   * Read-only.
   */
  function list_pull_requests(args: ListPullRequestsArgs): Promise<ListPullRequestsResult>;
  interface ListPullRequestsArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @default "open" */
    state?: "open" | "closed" | "all";
    /** Only pull requests into this branch. */
    base?: string;
    /** Only pull requests from this branch, as user:branch. */
    head?: string;
    /** @default "created" */
    sort?: "created" | "updated" | "popularity" | "long-running";
    /** @default 30 @minimum 1 @maximum 100 */
    per_page?: number;
  }
  interface ListPullRequestsResult {
    pull_requests: PullRequest[];
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
