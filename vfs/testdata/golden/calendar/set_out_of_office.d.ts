declare namespace calendar {
  /** Block time as out of office and auto-decline meetings in that period. */
  function set_out_of_office(args: SetOutOfOfficeArgs): Promise<SetOutOfOfficeResult>;
  interface SetOutOfOfficeArgs {
    start: When;
    end: When;
    /** @default "I am out of office." @maxLength 500 */
    message?: string;
    /** @default false */
    decline_existing?: boolean;
  }
  interface SetOutOfOfficeResult {
    event_id: string;
    declined: number;
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
}
