declare namespace analytics {
  /**
   * Get one user's properties and their most recent events.
   * Read-only.
   */
  function user_profile(args: UserProfileArgs): Promise<UserProfileResult>;
  interface UserProfileArgs {
    /** @minLength 1 */
    user_id: string;
    /** @default 20 @minimum 0 @maximum 100 */
    recent_events?: number;
  }
  interface UserProfileResult {
    user_id: string;
    properties: { [key: string]: unknown };
    /** @format date-time */
    first_seen?: string;
    events?: {
      event: string;
      /** @format date-time */
      time: string;
    }[];
  }
}
