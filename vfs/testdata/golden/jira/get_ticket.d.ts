declare namespace jira {
  /**
   * Get a Jira ticket by key with its fields, description and subtasks.
   * Read-only.
   */
  function get_ticket(args: GetTicketArgs): Promise<GetTicketResult>;
  function get_ticket(key: IssueKey): Promise<GetTicketResult>;
  interface GetTicketArgs {
    key: IssueKey;
  }
  type GetTicketResult = Ticket & {
    description?: string | null;
    subtasks?: IssueKey[];
  };
  /** Issue key such as OPS-142. @pattern ^[A-Z][A-Z0-9]+-[0-9]+$ */
  type IssueKey = string;
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
}
