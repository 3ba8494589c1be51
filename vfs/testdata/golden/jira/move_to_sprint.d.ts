declare namespace jira {
  /**
   * Move Jira tickets into a sprint (or to the backlog).
   * Idempotent.
   */
  function move_to_sprint(args: MoveToSprintArgs): Promise<MoveToSprintResult>;
  interface MoveToSprintArgs {
    /** Target sprint; null for the backlog. */
    sprint_id: number | null;
    /** @minItems 1 @maxItems 50 */
    keys: IssueKey[];
  }
  interface MoveToSprintResult {
    moved: number;
  }
  /** Issue key such as OPS-142. @pattern ^[A-Z][A-Z0-9]+-[0-9]+$ */
  type IssueKey = string;
}
