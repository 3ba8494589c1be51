declare namespace github {
  /**
   * List the comments on an issue or pull request, oldest first.
   * Read-only.
   */
  function list_issue_comments(args: ListIssueCommentsArgs): Promise<ListIssueCommentsResult>;
  interface ListIssueCommentsArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @minimum 1 */
    issue_number: number;
    /** Only comments updated at or after this time. @format date-time */
    since?: string;
    /** @default 30 @minimum 1 @maximum 100 */
    per_page?: number;
  }
  interface ListIssueCommentsResult {
    comments: {
      id: number;
      user: User;
      body: string;
      /** @format date-time */
      created_at: string;
    }[];
  }
  /** A GitHub account. */
  interface User {
    /** Account name. */
    login: string;
    id: number;
    type?: "User" | "Organization" | "Bot";
  }
}
