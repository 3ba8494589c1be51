declare namespace github {
  /**
   * List a repository's releases with tags, names, dates and asset counts.
   * Read-only.
   */
  function list_releases(args: ListReleasesArgs): Promise<ListReleasesResult>;
  interface ListReleasesArgs {
    /** @minLength 1 */
    owner: string;
    /** @minLength 1 */
    repo: string;
    /** @default 10 @minimum 1 @maximum 100 */
    per_page?: number;
  }
  interface ListReleasesResult {
    releases: {
      tag_name: string;
      name?: string | null;
      prerelease: boolean;
      /** @format date-time */
      published_at?: string | null;
      /** Number of attached files. */
      assets?: number;
    }[];
  }
}
