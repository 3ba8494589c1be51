declare namespace slack {
  /** Create a public or private channel and optionally invite members. */
  function create_channel(args: CreateChannelArgs): Promise<Channel>;
  interface CreateChannelArgs {
    /** @pattern ^[a-z0-9_-]{1,80}$ */
    name: string;
    /** @default false */
    is_private?: boolean;
    /** @maxLength 250 */
    topic?: string;
    /** User ids to invite. @maxItems 1000 */
    invite?: string[];
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
