declare namespace jira {
  /** Move a Jira ticket through its workflow, e.g. To Do → In Progress → Done. */
  function transition_ticket(args: TransitionTicketArgs): Promise<TransitionTicketResult>;
  function transition_ticket(key: IssueKey, to_status: string): Promise<TransitionTicketResult>;
  interface TransitionTicketArgs {
    key: IssueKey;
    /** Target status name as shown on the board. @minLength 1 */
    to_status: string;
    resolution?: "Done" | "Won't Do" | "Duplicate" | "Cannot Reproduce";
    comment?: string;
  }
  interface TransitionTicketResult {
    key: string;
    from: string;
    to: string;
  }
  /** Issue key such as OPS-142. @pattern ^[A-Z][A-Z0-9]+-[0-9]+$ */
  type IssueKey = string;
}
