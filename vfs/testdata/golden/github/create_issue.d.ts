declare namespace github {
  /** Open a new issue in a repository, optionally with labels, assignees and a milestone. */
  function create_issue(args: CreateIssueArgs): Promise<Issue>;
  interface CreateIssueArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @minLength 1 @maxLength 256 */
    title: string;
    /** Markdown body. */
    body?: string;
    /** @maxItems 20 @uniqueItems */
    labels?: string[];
    /** Logins to assign. @maxItems 10 */
    assignees?: string[];
    /** Milestone number. @minimum 1 */
    milestone?: number;
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
