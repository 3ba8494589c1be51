declare namespace jira {
  /** Add a comment to a Jira ticket, optionally visible to one role only. */
  function add_comment(args: AddCommentArgs): Promise<AddCommentResult>;
  function add_comment(key: IssueKey, body: string): Promise<AddCommentResult>;
  interface AddCommentArgs {
    key: IssueKey;
    /** @minLength 1 @maxLength 32767 */
    body: string;
    visibility_role?: string;
  }
  interface AddCommentResult {
    id: string;
    /** @format date-time */
    created?: string;
  }
  /** Issue key such as OPS-142. @pattern ^[A-Z][A-Z0-9]+-[0-9]+$ */
  type IssueKey = string;
}
