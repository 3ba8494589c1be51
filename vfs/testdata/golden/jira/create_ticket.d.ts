declare namespace jira {
  /** Create a Jira ticket (bug, task, story, epic) in a project. */
  function create_ticket(args: CreateTicketArgs): Promise<CreateTicketResult>;
  interface CreateTicketArgs {
    /** Project key. @pattern ^[A-Z][A-Z0-9]+$ */
    project: string;
    /** @default "Task" */
    type?: "Bug" | "Task" | "Story" | "Epic" | "Sub-task";
    /** @minLength 1 @maxLength 255 */
    summary: string;
    description?: string;
    /** @default "Medium" */
    priority?: "Highest" | "High" | "Medium" | "Low" | "Lowest";
    /** @format email */
    assignee?: string;
    labels?: string[];
    parent?: IssueKey;
    custom_fields?: { [key: string]: string | number | boolean | null };
  }
  interface CreateTicketResult {
    key: IssueKey;
    /** @format uri */
    url: string;
  }
  /** Issue key such as OPS-142. @pattern ^[A-Z][A-Z0-9]+-[0-9]+$ */
  type IssueKey = string;
}
