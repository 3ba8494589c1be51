declare namespace analytics {
  /**
   * Measure conversion through an ordered sequence of events (funnel) with drop-off per step.
   * Read-only.
   */
  function funnel(args: FunnelArgs): Promise<FunnelResult>;
  interface FunnelArgs {
    /** @minItems 2 @maxItems 10 */
    steps: string[];
    range: DateRange;
    /** @default 7 @minimum 1 @maximum 90 */
    window_days?: number;
    filters?: Filter[];
  }
  interface FunnelResult {
    steps: {
      event: string;
      users: number;
      /** Share of step 1's users. @minimum 0 @maximum 1 */
      conversion: number;
    }[];
  }
  interface DateRange {
    /** @format date */
    from: string;
    /** Inclusive. @format date */
    to: string;
  }
  /** A condition on an event or user property. */
  interface Filter {
    property: string;
    op: "eq" | "neq" | "contains" | "gt" | "lt" | "in" | "is_set";
    value?: string | number | boolean | string[];
  }
}
