declare namespace email {
  /**
   * Read a whole e-mail conversation (thread), oldest message first.
   * Read-only.
   */
  function get_thread(args: GetThreadArgs): Promise<GetThreadResult>;
  interface GetThreadArgs {
    /** @minLength 1 */
    thread_id: string;
    /** @default true */
    trim_quotes?: boolean;
  }
  interface GetThreadResult {
    thread_id: string;
    messages: (Summary & {
      body?: string;
    })[];
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
