declare namespace analytics {
  /**
   * Cohort retention: of users who did A, how many came back to do B in later weeks.
   * Read-only.
   */
  function retention(args: RetentionArgs): Promise<RetentionResult>;
  interface RetentionArgs {
    start_event: string;
    return_event: string;
    range: DateRange;
    interval?: Interval;
    /** @default 8 @minimum 1 @maximum 52 */
    periods?: number;
  }
  interface RetentionResult {
    cohorts: {
      start: string;
      size: number;
      retained: number[];
    }[];
  }
  interface DateRange {
    /** @format date */
    from: string;
    /** Inclusive. @format date */
    to: string;
  }
  /** @default "day" */
  type Interval = "hour" | "day" | "week" | "month";
}
