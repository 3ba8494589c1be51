declare namespace github {
  /**
   * Search issues and pull requests across repositories with GitHub search syntax.
   * Read-only.
   */
  function search_issues(args: SearchIssuesArgs): Promise<SearchIssuesResult>;
  function search_issues(query: string): Promise<SearchIssuesResult>;
  interface SearchIssuesArgs {
    /** Search query, e.g. "repo:acme/api is:open label:bug". @minLength 1 @maxLength 256 */
    query: string;
    /** Sort field; best match when omitted. */
    sort?: "comments" | "reactions" | "created" | "updated";
    /** @default "desc" */
    order?: "asc" | "desc";
    /** @default 30 @minimum 1 @maximum 100 */
    per_page?: number;
    /** @default 1 @minimum 1 */
    page?: number;
  }
  interface SearchIssuesResult {
    total_count: number;
    incomplete_results?: boolean;
    items: Issue[];
  }
  /** An issue or pull request as returned by issue endpoints. */
  interface Issue {
    /** @minimum 1 */
    number: number;
    title: string;
    state: "open" | "closed";
    state_reason?: "completed" | "not_planned" | "reopened" | null;
    /** Markdown body, null when empty. */
    body?: string | null;
    user: User;
    labels?: Label[];
    assignees?: User[];
    /** @minimum 0 */
    comments?: number;
    is_pull_request?: boolean;
    /** @format date-time */
    created_at: string;
    /** @format date-time */
    updated_at?: string;
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
  interface Label {
    name: string;
    /** Hex colour without #. @pattern ^[0-9a-f]{6}$ */
    color?: string;
  }
}
