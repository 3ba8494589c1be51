declare namespace github {
  /**
   * Merge a pull request with a merge commit, squash or rebase.
   * Destructive: changes or deletes data.
   */
  function merge_pull_request(args: MergePullRequestArgs): Promise<MergePullRequestResult>;
  interface MergePullRequestArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @minimum 1 */
    pull_number: number;
    /** @default "merge" */
    merge_method?: "merge" | "squash" | "rebase";
    /** @maxLength 256 */
    commit_title?: string;
    /** Head commit the merge must match. @pattern ^[0-9a-f]{40}$ */
    sha?: string;
  }
  interface MergePullRequestResult {
    merged: boolean;
    sha: string;
    message?: string;
  }
}
