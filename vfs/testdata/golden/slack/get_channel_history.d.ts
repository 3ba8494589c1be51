declare namespace slack {
  /**
   * Read recent messages of a channel, newest first, optionally within a time range.
   * Read-only.
   */
  function get_channel_history(args: GetChannelHistoryArgs): Promise<GetChannelHistoryResult>;
  function get_channel_history(channel: string): Promise<GetChannelHistoryResult>;
  interface GetChannelHistoryArgs {
    /** @minLength 1 */
    channel: string;
    /** Only messages after this timestamp. */
    oldest?: string;
    /** Only messages before this timestamp. */
    latest?: string;
    /** @default 100 @minimum 1 @maximum 1000 */
    limit?: number;
    cursor?: string;
  }
  interface GetChannelHistoryResult {
    messages: Message[];
    has_more: boolean;
    next_cursor?: string | null;
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
