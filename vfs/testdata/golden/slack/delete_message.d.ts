declare namespace slack {
  /**
   * Delete a message the bot posted.
   * Destructive: changes or deletes data. Idempotent.
   */
  function delete_message(args: DeleteMessageArgs): Promise<DeleteMessageResult>;
  interface DeleteMessageArgs {
    /** @minLength 1 */
    channel: string;
    /** @minLength 1 */
    ts: string;
  }
  interface DeleteMessageResult {
    channel: string;
    ts: string;
  }
}
