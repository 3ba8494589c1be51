declare namespace calendar {
  /**
   * Get one calendar event by id with attendees and their responses.
   * Read-only.
   */
  function get_event(args: GetEventArgs): Promise<Event>;
  interface GetEventArgs {
    /** @default "primary" */
    calendar_id?: string;
    /** @minLength 1 */
    event_id: string;
  }
  interface Event {
    id: string;
    calendar_id?: string;
    title: string;
    description?: string | null;
    location?: string | null;
    start: When;
    end: When;
    attendees?: Attendee[];
    /** @format email */
    organizer?: string;
    /** RRULE, e.g. FREQ=WEEKLY;BYDAY=MO. */
    recurrence?: string | null;
    /** @format uri */
    conference_url?: string | null;
    status: "confirmed" | "tentative" | "cancelled";
  }
  /** A point in time: a date-time with offset for timed events, or a date for all-day events. */
  type When = {
    /** @format date-time */
    date_time: string;
    /** IANA zone, e.g. Europe/Paris. */
    time_zone?: string;
  } | {
    /** @format date */
    date: string;
  };
  interface Attendee {
    /** @format email */
    email: string;
    name?: string;
    /** @default false */
    optional?: boolean;
    response?: "needs_action" | "accepted" | "declined" | "tentative";
  }
}
