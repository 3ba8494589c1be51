declare namespace analytics {
  /** Record a product event for a user, with properties. */
  function track_event(args: TrackEventArgs): Promise<TrackEventResult>;
  interface TrackEventArgs {
    /** @minLength 1 @maxLength 200 */
    event: string;
    /** @minLength 1 */
    user_id: string;
    properties?: { [key: string]: string | number | boolean | null };
    /** When it happened; now when omitted. @format date-time */
    timestamp?: string;
  }
  interface TrackEventResult {
    accepted: boolean;
  }
}
