declare namespace weather {
  /**
   * Get past daily weather (temperature, rain) for a date range since 1940.
   * Read-only.
   */
  function historical(args: HistoricalArgs): Promise<HistoricalResult>;
  interface HistoricalArgs {
    location: Location;
    /** @format date */
    start_date: string;
    /** @format date */
    end_date: string;
    units?: Units;
  }
  interface HistoricalResult {
    days: {
      /** @format date */
      date: string;
      mean: number;
      high?: number;
      low?: number;
      precipitation?: number;
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
  /** metric: °C, km/h, mm; imperial: °F, mph, in. @default "metric" */
  type Units = "metric" | "imperial";
}
