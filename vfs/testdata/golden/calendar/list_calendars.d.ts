declare namespace calendar {
  /**
   * List the calendars the user owns or subscribes to, with colours and access roles.
   * Read-only.
   */
  function list_calendars(args?: ListCalendarsArgs): Promise<ListCalendarsResult>;
  type ListCalendarsArgs = Record<string, never>;
  interface ListCalendarsResult {
    calendars: {
      id: string;
      name: string;
      time_zone?: string;
      access: "owner" | "writer" | "reader" | "free_busy";
      primary?: boolean;
    }[];
  }
}
