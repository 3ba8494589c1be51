declare namespace jira {
  /**
   * Link two Jira tickets: blocks, relates to, duplicates, clones.
   * Idempotent.
   */
  function link_tickets(args: LinkTicketsArgs): Promise<LinkTicketsResult>;
  interface LinkTicketsArgs {
    from: IssueKey;
    to: IssueKey;
    type: "blocks" | "relates to" | "duplicates" | "clones";
  }
  interface LinkTicketsResult {
    id: string;
  }
  /** Issue key such as OPS-142. @pattern ^[A-Z][A-Z0-9]+-[0-9]+$ */
  type IssueKey = string;
}
