declare namespace calendar {
  /**
   * Cancel (delete) a calendar event and notify its attendees.
   * Destructive: changes or deletes data. Idempotent.
   */
  function cancel_event(args: CancelEventArgs): Promise<CancelEventResult>;
  interface CancelEventArgs {
    /** @default "primary" */
    calendar_id?: string;
    /** @minLength 1 */
    event_id: string;
    /** @maxLength 2000 */
    message?: string;
    /** @default "this" */
    scope?: "this" | "following" | "all";
  }
  interface CancelEventResult {
    cancelled: string;
    notified?: number;
  }
}
