declare namespace github {
  /**
   * Find repositories by name, topic, language or owner with GitHub search syntax.
   * Read-only.
   */
  function search_repositories(args: SearchRepositoriesArgs): Promise<SearchRepositoriesResult>;
  function search_repositories(query: string): Promise<SearchRepositoriesResult>;
  interface SearchRepositoriesArgs {
    /** @minLength 1 @maxLength 256 */
    query: string;
    sort?: "stars" | "forks" | "updated";
    /** @default 30 @minimum 1 @maximum 100 */
    per_page?: number;
  }
  interface SearchRepositoriesResult {
    total_count: number;
    items: Repository[];
  }
  interface Repository {
    /** owner/name */
    full_name: string;
    description?: string | null;
    private: boolean;
    default_branch: string;
    language?: string | null;
    stargazers_count?: number;
    open_issues_count?: number;
    topics?: string[];
    /** @format date-time */
    pushed_at?: string;
  }
}
