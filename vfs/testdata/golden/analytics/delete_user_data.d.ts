declare namespace analytics {
  /**
   * Delete all events and properties of a user (GDPR erasure request).
   * Destructive: changes or deletes data. Idempotent.
   */
  function delete_user_data(args: DeleteUserDataArgs): Promise<DeleteUserDataResult>;
  interface DeleteUserDataArgs {
    /** @minLength 1 */
    user_id: string;
    /** Must be true. */
    confirm: true;
  }
  interface DeleteUserDataResult {
    request_id: string;
    /** @format date */
    due_by?: string;
  }
}
