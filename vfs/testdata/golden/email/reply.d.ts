declare namespace email {
  /** Reply (or reply all) to an e-mail, keeping it in the same thread. */
  function reply(args: ReplyArgs): Promise<ReplyResult>;
  function reply(message_id: string, body: string): Promise<ReplyResult>;
  interface ReplyArgs {
    /** @minLength 1 */
    message_id: string;
    /** @minLength 1 */
    body: string;
    /** @default false */
    reply_all?: boolean;
    /** @default true */
    quote_original?: boolean;
  }
  interface ReplyResult {
    id: string;
    thread_id: string;
  }
}
