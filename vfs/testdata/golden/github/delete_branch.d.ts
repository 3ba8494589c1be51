declare namespace github {
  /**
   * Delete a branch (a git ref) from a repository.
   * Destructive: changes or deletes data. Idempotent.
   */
  function delete_branch(args: DeleteBranchArgs): Promise<DeleteBranchResult>;
  interface DeleteBranchArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** Branch name without refs/heads/. @minLength 1 */
    branch: string;
  }
  interface DeleteBranchResult {
    /** The ref that was deleted. */
    deleted: string;
  }
}
