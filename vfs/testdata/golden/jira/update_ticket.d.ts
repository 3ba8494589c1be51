declare namespace jira {
  /**
   * Change fields of a Jira ticket: summary, priority, assignee, labels, story points.
   * Idempotent.
   */
  function update_ticket(args: UpdateTicketArgs): Promise<Ticket>;
  interface UpdateTicketArgs {
    key: IssueKey;
    /** @minLength 1 @maxLength 255 */
    summary?: string;
    priority?: "Highest" | "High" | "Medium" | "Low" | "Lowest";
    /** E-mail, or null to unassign. */
    assignee?: string | null;
    labels_add?: string[];
    labels_remove?: string[];
    /** @minimum 0 @maximum 100 */
    story_points?: number;
  }
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
