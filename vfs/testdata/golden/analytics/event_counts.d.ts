declare namespace analytics {
  /**
   * Count events over time, optionally broken down by a property (time series).
   * Read-only.
   */
  function event_counts(args: EventCountsArgs): Promise<EventCountsResult>;
  interface EventCountsArgs {
    /** @minLength 1 */
    event: string;
    range: DateRange;
    interval?: Interval;
    /** @default "total" */
    measure?: "total" | "uniques";
    /** Property to split by. */
    breakdown?: string;
    filters?: Filter[];
  }
  interface EventCountsResult {
    series: {
      segment?: string | null;
      points: {
        t: string;
        v: number;
      }[];
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
  /** A condition on an event or user property. */
  interface Filter {
    property: string;
    op: "eq" | "neq" | "contains" | "gt" | "lt" | "in" | "is_set";
    value?: string | number | boolean | string[];
  }
}
