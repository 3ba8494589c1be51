declare namespace github {
  /** Open a pull request from a head branch into a base branch. */
  function create_pull_request(args: CreatePullRequestArgs): Promise<PullRequest>;
  interface CreatePullRequestArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @minLength 1 @maxLength 256 */
    title: string;
    /** Branch with the changes; user:branch for forks. @minLength 1 */
    head: string;
    /** Branch to merge into. @minLength 1 */
    base: string;
    body?: string;
    /** @default false */
    draft?: boolean;
    /** @maxItems 15 */
    reviewers?: string[];
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
