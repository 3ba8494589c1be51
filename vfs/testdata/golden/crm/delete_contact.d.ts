declare namespace crm {
  /**
   * Delete a CRM contact; it can be restored from the recycle bin for 90 days.
   * Destructive: changes or deletes data. Idempotent.
   */
  function delete_contact(args: DeleteContactArgs): Promise<DeleteContactResult>;
  interface DeleteContactArgs {
    /** @minLength 1 */
    id: string;
  }
  interface DeleteContactResult {
    deleted: string;
    /** @format date */
    restorable_until?: string;
  }
}
