declare namespace analytics {
  /**
   * Get a business metric (MRR, DAU, churn rate…) over time from the metrics layer.
   * Read-only.
   */
  function get_metric(args: GetMetricArgs): Promise<GetMetricResult>;
  function get_metric(name: string, range: DateRange): Promise<GetMetricResult>;
  interface GetMetricArgs {
    /** @minLength 1 */
    name: string;
    range: DateRange;
    interval?: Interval;
    /** @default false */
    compare_previous?: boolean;
  }
  interface GetMetricResult {
    name: string;
    unit: "count" | "currency" | "percent" | "seconds";
    points: {
      t: string;
      v: number;
      previous?: number | null;
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
