declare namespace crm {
  /**
   * List a contact's or deal's timeline: e-mails, calls, meetings and notes.
   * Read-only.
   */
  function list_activities(args: ListActivitiesArgs): Promise<ListActivitiesResult>;
  interface ListActivitiesArgs {
    record_type: "contact" | "company" | "deal";
    /** @minLength 1 */
    record_id: string;
    kinds?: ("email" | "call" | "meeting" | "note" | "task")[];
    /** @default 20 @minimum 1 @maximum 100 */
    limit?: number;
  }
  interface ListActivitiesResult {
    activities: {
      kind: "email" | "call" | "meeting" | "note" | "task";
      /** @format date-time */
      at: string;
      by?: string;
      subject?: string;
      duration_min?: number | null;
    }[];
  }
}
