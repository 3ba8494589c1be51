declare namespace analytics {
  /**
   * List the most common values of an event property (e.g. top pages, top countries).
   * Read-only.
   */
  function top_values(args: TopValuesArgs): Promise<TopValuesResult>;
  interface TopValuesArgs {
    event: string;
    property: string;
    range: DateRange;
    /** @default 10 @minimum 1 @maximum 1000 */
    limit?: number;
  }
  interface TopValuesResult {
    values: {
      value: string | number | boolean | null;
      count: number;
    }[];
  }
  interface DateRange {
    /** @format date */
    from: string;
    /** Inclusive. @format date */
    to: string;
  }
}
