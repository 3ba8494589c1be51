declare namespace slack {
  /**
   * Search messages across channels with Slack search modifiers (in:, from:, before:, after:).
   * Read-only.
   */
  function search_messages(args: SearchMessagesArgs): Promise<SearchMessagesResult>;
  function search_messages(query: string): Promise<SearchMessagesResult>;
  interface SearchMessagesArgs {
    /** @minLength 1 @maxLength 500 */
    query: string;
    /** @default "score" */
    sort?: "score" | "timestamp";
    /** @default 20 @minimum 1 @maximum 100 */
    count?: number;
  }
  interface SearchMessagesResult {
    total: number;
    matches: {
      channel: {
        id: string;
        name: string;
      };
      user?: string;
      ts: string;
      text: string;
      /** @format uri */
      permalink?: string;
    }[];
  }
}
