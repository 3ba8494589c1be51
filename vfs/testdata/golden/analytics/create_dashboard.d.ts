declare namespace analytics {
  /** Create a dashboard of charts from saved queries or metrics and share it. */
  function create_dashboard(args: CreateDashboardArgs): Promise<CreateDashboardResult>;
  interface CreateDashboardArgs {
    /** @minLength 1 @maxLength 200 */
    title: string;
    /** @minItems 1 @maxItems 30 */
    tiles: ({
      kind: "metric";
      metric: string;
    } | {
      kind: "events";
      event: string;
      breakdown?: string;
    })[];
    share_with?: string[];
  }
  interface CreateDashboardResult {
    id: string;
    /** @format uri */
    url: string;
  }
}
