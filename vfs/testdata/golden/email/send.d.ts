declare namespace email {
  /** Send an e-mail with To, Cc, Bcc, a text or HTML body and attachments. */
  function send(args: SendArgs): Promise<SendResult>;
  interface SendArgs {
    /** @minItems 1 @maxItems 100 */
    to: Address[];
    cc?: Address[];
    bcc?: Address[];
    /** @maxLength 998 */
    subject: string;
    /** Plain text body. */
    body: string;
    /** HTML alternative; plain text is still sent. */
    html_body?: string;
    attachments?: ({
      filename: string;
      mime_type?: string;
      /** @contentEncoding base64 */
      content_base64: string;
    } | {
      drive_file_id: string;
    })[];
    reply_to?: Address;
  }
  interface SendResult {
    id: string;
    thread_id: string;
  }
  interface Address {
    name?: string;
    /** @format email */
    email: string;
  }
}
