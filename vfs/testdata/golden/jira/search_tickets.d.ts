declare namespace jira {
  /**
   * Find Jira tickets with a JQL query, returning key, summary, status and assignee.
   * Read-only.
   */
  function search_tickets(args: SearchTicketsArgs): Promise<SearchTicketsResult>;
  function search_tickets(jql: string): Promise<SearchTicketsResult>;
  interface SearchTicketsArgs {
    /** JQL query. @minLength 1 @maxLength 2000 */
    jql: string;
    /** @uniqueItems */
    fields?: ("summary" | "type" | "status" | "priority" | "assignee" | "reporter" | "labels" | "story_points" | "sprint" | "created" | "updated")[];
    /** @default 50 @minimum 1 @maximum 100 */
    max_results?: number;
    /** @default 0 @minimum 0 */
    start_at?: number;
  }
  interface SearchTicketsResult {
    total: number;
    tickets: Ticket[];
  }
  interface Ticket {
    key: IssueKey;
    summary: string;
    type: "Bug" | "Task" | "Story" | "Epic" | "Sub-task";
    /** Workflow status name, e.g. "In Progress". */
    status: string;
    priority?: "Highest" | "High" | "Medium" | "Low" | "Lowest";
    /** Account e-mail, null when unassigned. */
    assignee?: string | null;
    reporter?: string;
    labels?: string[];
    story_points?: number | null;
    sprint?: string | null;
    /** @format date-time */
    created?: string;
    /** @format date-time */
    updated?: string;
  }
  /** Issue key such as OPS-142. @pattern ^[A-Z][A-Z0-9]+-[0-9]+$ */
  type IssueKey = string;
}
