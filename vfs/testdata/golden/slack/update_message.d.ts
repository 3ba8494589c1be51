declare namespace slack {
  /**
   * Edit the text or blocks of a message the bot posted earlier.
   * Idempotent.
   */
  function update_message(args: UpdateMessageArgs): Promise<UpdateMessageResult>;
  interface UpdateMessageArgs {
    /** @minLength 1 */
    channel: string;
    /** Timestamp of the message to edit. @minLength 1 */
    ts: string;
    /** @minLength 1 @maxLength 40000 */
    text: string;
    blocks?: Block[];
  }
  interface UpdateMessageResult {
    channel: string;
    ts: string;
    text?: string;
  }
  /** A Block Kit layout block. */
  interface Block {
    type: "section" | "divider" | "header" | "context" | "actions";
    text?: {
      type: "plain_text" | "mrkdwn";
      /** @maxLength 3000 */
      text: string;
    };
    [key: string]: unknown;
  }
}
