declare namespace calendar {
  /**
   * Find times when all given people are free, within working hours.
   * Read-only.
   */
  function find_free_slots(args: FindFreeSlotsArgs): Promise<FindFreeSlotsResult>;
  interface FindFreeSlotsArgs {
    /** @minItems 1 @maxItems 50 */
    attendees: string[];
    /** @minimum 5 @maximum 480 */
    duration_min: number;
    /** @format date-time */
    window_start: string;
    /** @format date-time */
    window_end: string;
    /** @default true */
    working_hours_only?: boolean;
    /** @default 5 @minimum 1 @maximum 50 */
    max_slots?: number;
  }
  interface FindFreeSlotsResult {
    slots: {
      /** @format date-time */
      start: string;
      /** @format date-time */
      end: string;
    }[];
    /** Attendees whose calendars could not be read. */
    unknown?: string[];
  }
}
