declare namespace slack {
  /**
   * Invite users to a channel by user id.
   * Idempotent.
   */
  function invite_to_channel(args: InviteToChannelArgs): Promise<Channel>;
  interface InviteToChannelArgs {
    /** @minLength 1 */
    channel: string;
    /** @minItems 1 @maxItems 1000 */
    users: string[];
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
