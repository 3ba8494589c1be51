declare namespace email {
  /**
   * Download an e-mail attachment as base64, or save it to Drive.
   * Read-only.
   */
  function get_attachment(args: GetAttachmentArgs): Promise<GetAttachmentResult>;
  interface GetAttachmentArgs {
    /** @minLength 1 */
    message_id: string;
    /** @minLength 1 */
    attachment_id: string;
    /** @default false */
    save_to_drive?: boolean;
  }
  type GetAttachmentResult = {
    filename: string;
    mime_type?: string;
    content_base64: string;
  } | {
    drive_file_id: string;
  };
}
