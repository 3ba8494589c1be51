declare namespace analytics {
  /**
   * List the defined business metrics with their descriptions and units.
   * Read-only.
   */
  function list_metrics(args?: ListMetricsArgs): Promise<ListMetricsResult>;
  interface ListMetricsArgs {
    tag?: string;
  }
  interface ListMetricsResult {
    metrics: {
      name: string;
      description: string;
      unit?: string;
    }[];
  }
}
