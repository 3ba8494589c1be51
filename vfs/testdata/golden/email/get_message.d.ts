declare namespace email {
  /**
   * Read one e-mail with headers, text body and attachment list.
   * Read-only.
   */
  function get_message(args: GetMessageArgs): Promise<GetMessageResult>;
  function get_message(id: string): Promise<GetMessageResult>;
  interface GetMessageArgs {
    /** @minLength 1 */
    id: string;
    /** @default "text" */
    format?: "text" | "html" | "raw";
    /** @default false */
    mark_read?: boolean;
  }
  type GetMessageResult = Summary & {
    cc?: Address[];
    body: string;
    attachments?: Attachment[];
  };
  /** A message without its body. */
  interface Summary {
    id: string;
    thread_id: string;
    from: Address;
    to?: Address[];
    subject: string;
    /** First ~200 characters of the text body. */
    snippet?: string;
    /** @format date-time */
    date: string;
    unread?: boolean;
    labels?: string[];
    has_attachments?: boolean;
  }
  interface Address {
    name?: string;
    /** @format email */
    email: string;
  }
  interface Attachment {
    filename: string;
    mime_type: string;
    /** @minimum 0 */
    size: number;
    attachment_id: string;
  }
}
