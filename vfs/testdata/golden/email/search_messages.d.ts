declare namespace email {
  /**
   * Search the mailbox with Gmail-style operators (from:, to:, subject:, has:attachment, newer_than:).
   * Read-only.
   */
  function search_messages(args: SearchMessagesArgs): Promise<SearchMessagesResult>;
  function search_messages(query: string): Promise<SearchMessagesResult>;
  interface SearchMessagesArgs {
    /** @maxLength 1000 */
    query: string;
    /** @default 50 @minimum 1 @maximum 500 */
    max_results?: number;
    page_token?: string;
    /** @default false */
    include_spam_trash?: boolean;
  }
  interface SearchMessagesResult {
    messages: Summary[];
    next_page_token?: string | null;
    estimated_total?: number;
  }
  /** A message without its body. */
  interface Summary {
    id: string;
    thread_id: string;
    from: Address;
    to?: Address[];
    subject: string;
    /** First ~200 characters of the text body. */
    snippet?: string;
    /** @format date-time */
    date: string;
    unread?: boolean;
    labels?: string[];
    has_attachments?: boolean;
  }
  interface Address {
    name?: string;
    /** @format email */
    email: string;
  }
}
