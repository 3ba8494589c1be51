declare namespace slack {
  /** Send a message to a channel, DM or thread, as plain mrkdwn text or Block Kit blocks. */
  function post_message(args: PostMessageArgs): Promise<PostMessageResult>;
  function post_message(channel: string, text: string): Promise<PostMessageResult>;
  interface PostMessageArgs {
    /** Channel id or #name. @minLength 1 */
    channel: string;
    /** Message text in mrkdwn. @minLength 1 @maxLength 40000 */
    text: string;
    /** @maxItems 50 */
    blocks?: Block[];
    /** Reply in this thread. */
    thread_ts?: string;
    /** Also show a thread reply in the channel. @default false */
    reply_broadcast?: boolean;
    /** @default true */
    unfurl_links?: boolean;
  }
  interface PostMessageResult {
    channel: string;
    ts: string;
    /** @format uri */
    permalink?: string;
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
