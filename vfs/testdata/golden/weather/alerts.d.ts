declare namespace weather {
  /**
   * List active severe weather warnings (storms, floods, heat) for an area.
   * Read-only.
   */
  function alerts(args: AlertsArgs): Promise<AlertsResult>;
  interface AlertsArgs {
    location: Location;
    /** @default "moderate" */
    min_severity?: "minor" | "moderate" | "severe" | "extreme";
  }
  interface AlertsResult {
    alerts: {
      event: string;
      severity: "minor" | "moderate" | "severe" | "extreme";
      /** @format date-time */
      starts: string;
      /** @format date-time */
      ends?: string;
      headline: string;
      issuer?: string;
    }[];
  }
  /** A place: coordinates, or a name to geocode. */
  type Location = {
    /** @minimum -90 @maximum 90 */
    lat: number;
    /** @minimum -180 @maximum 180 */
    lon: number;
  } | {
    /** City or address, e.g. "Lyon, FR". @minLength 1 */
    place: string;
  };
}
