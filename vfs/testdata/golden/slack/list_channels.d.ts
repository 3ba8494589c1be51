declare namespace slack {
  /**
   * List public and private channels the bot can see, with member counts and topics.
   * Read-only.
   */
  function list_channels(args?: ListChannelsArgs): Promise<ListChannelsResult>;
  interface ListChannelsArgs {
    /** @default ["public_channel"] @uniqueItems */
    types?: ("public_channel" | "private_channel" | "mpim" | "im")[];
    /** @default false */
    include_archived?: boolean;
    /** @default 200 @minimum 1 @maximum 1000 */
    limit?: number;
    cursor?: string;
  }
  interface ListChannelsResult {
    channels: Channel[];
    next_cursor?: string | null;
  }
  interface Channel {
    /** Channel id, e.g. C0123ABCD. */
    id: string;
    name: string;
    is_private: boolean;
    is_archived?: boolean;
    topic?: string;
    num_members?: number;
  }
}
