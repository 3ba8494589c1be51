declare namespace github {
  /**
   * Get one issue or pull request by number, with labels, assignees and body.
   * Read-only.
   */
  function get_issue(args: GetIssueArgs): Promise<Issue>;
  function get_issue(owner: string, repo: string, issue_number: number): Promise<Issue>;
  interface GetIssueArgs {
    /** Repository owner. @minLength 1 */
    owner: string;
    /** Repository name. @minLength 1 */
    repo: string;
    /** @minimum 1 */
    issue_number: number;
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
