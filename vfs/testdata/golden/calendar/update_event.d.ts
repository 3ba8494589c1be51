declare namespace calendar {
  /**
   * Reschedule or edit a calendar event: time, title, attendees, location.
   * Idempotent.
   */
  function update_event(args: UpdateEventArgs): Promise<Event>;
  interface UpdateEventArgs {
    /** @default "primary" */
    calendar_id?: string;
    /** @minLength 1 */
    event_id: string;
    title?: string;
    start?: When;
    end?: When;
    location?: string | null;
    add_attendees?: Attendee[];
    remove_attendees?: string[];
    /** @default "this" */
    scope?: "this" | "following" | "all";
    /** @default true */
    send_updates?: boolean;
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
}
