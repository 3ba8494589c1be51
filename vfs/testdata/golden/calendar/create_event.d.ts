declare namespace calendar {
  /** Schedule a meeting or event with attendees, location, video link and reminders. */
  function create_event(args: CreateEventArgs): Promise<Event>;
  interface CreateEventArgs {
    /** @default "primary" */
    calendar_id?: string;
    /** @minLength 1 @maxLength 1024 */
    title: string;
    start: When;
    end: When;
    description?: string;
    location?: string;
    /** @maxItems 200 */
    attendees?: Attendee[];
    /** @pattern ^RRULE: */
    recurrence?: string;
    /** @default false */
    add_video_call?: boolean;
    /** Minutes before the start. @maxItems 5 */
    reminders_min?: number[];
    /** @default true */
    send_invites?: boolean;
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
