declare namespace email {
  /**
   * Move e-mails to the trash; they are deleted for good after 30 days.
   * Destructive: changes or deletes data. Idempotent.
   */
  function trash_messages(args: TrashMessagesArgs): Promise<TrashMessagesResult>;
  interface TrashMessagesArgs {
    /** @minItems 1 @maxItems 1000 */
    message_ids: string[];
  }
  interface TrashMessagesResult {
    trashed: number;
  }
}
