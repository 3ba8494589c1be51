declare namespace slack {
  /**
   * Add an emoji reaction to a message.
   * Idempotent.
   */
  function add_reaction(args: AddReactionArgs): Promise<AddReactionResult>;
  interface AddReactionArgs {
    /** @minLength 1 */
    channel: string;
    /** @minLength 1 */
    ts: string;
    /** Emoji name, e.g. white_check_mark. @pattern ^[a-z0-9_+-]+$ */
    name: string;
  }
  interface AddReactionResult {
    ok: boolean;
  }
}
