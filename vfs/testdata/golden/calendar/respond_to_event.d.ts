declare namespace calendar {
  /**
   * Accept, decline or tentatively accept a meeting invitation.
   * Idempotent.
   */
  function respond_to_event(args: RespondToEventArgs): Promise<RespondToEventResult>;
  function respond_to_event(event_id: string, response: "accepted" | "declined" | "tentative"): Promise<RespondToEventResult>;
  interface RespondToEventArgs {
    /** @minLength 1 */
    event_id: string;
    response: "accepted" | "declined" | "tentative";
    /** @maxLength 500 */
    comment?: string;
  }
  interface RespondToEventResult {
    event_id: string;
    response: string;
  }
}
