declare namespace calendar {
  /**
   * List calendar events between two times, expanded from recurring series.
   * Read-only.
   */
  function list_events(args: ListEventsArgs): Promise<ListEventsResult>;
  interface ListEventsArgs {
    /** @default "primary" */
    calendar_id?: string;
    /** @format date-time */
    time_min: string;
    /** @format date-time */
    time_max: string;
    /** Words to match in title, description, location or attendees. */
    query?: string;
    /** @default 250 @minimum 1 @maximum 2500 */
    max_results?: number;
  }
  interface ListEventsResult {
    events: Event[];
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
