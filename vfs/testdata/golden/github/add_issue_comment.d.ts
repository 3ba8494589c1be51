declare namespace github {
  /** Post a Markdown comment on an issue or pull request. */
  function add_issue_comment(args: AddIssueCommentArgs): Promise<AddIssueCommentResult>;
  interface AddIssueCommentArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @minimum 1 */
    issue_number: number;
    /** Markdown text of the comment. @minLength 1 @maxLength 65536 */
    body: string;
  }
  interface AddIssueCommentResult {
    id: number;
    /** @format uri */
    html_url: string;
    /** @format date-time */
    created_at?: string;
  }
}
