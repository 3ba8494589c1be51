declare namespace slack {
  /**
   * Read all replies in a message thread.
   * Read-only.
   */
  function get_thread_replies(args: GetThreadRepliesArgs): Promise<GetThreadRepliesResult>;
  interface GetThreadRepliesArgs {
    /** @minLength 1 */
    channel: string;
    /** Timestamp of the parent message. @minLength 1 */
    thread_ts: string;
    /** @default 200 @minimum 1 @maximum 1000 */
    limit?: number;
  }
  interface GetThreadRepliesResult {
    messages: Message[];
  }
  interface Message {
    /** Message timestamp, also its id within the channel. @pattern ^[0-9]+\.[0-9]+$ */
    ts: string;
    /** User id of the author, e.g. U024BE7LH. */
    user?: string;
    text: string;
    /** Timestamp of the thread parent, when in a thread. */
    thread_ts?: string;
    /** @minimum 0 */
    reply_count?: number;
    reactions?: {
      name: string;
      count: number;
    }[];
  }
}
