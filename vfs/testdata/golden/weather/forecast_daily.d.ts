declare namespace weather {
  /**
   * Get a daily weather forecast for up to 16 days: highs, lows, rain chance, sunrise.
   * Read-only.
   */
  function forecast_daily(args: ForecastDailyArgs): Promise<ForecastDailyResult>;
  interface ForecastDailyArgs {
    location: Location;
    /** @default 7 @minimum 1 @maximum 16 */
    days?: number;
    units?: Units;
  }
  interface ForecastDailyResult {
    place: string;
    time_zone?: string;
    days: {
      /** @format date */
      date: string;
      high: number;
      low: number;
      /** @minimum 0 @maximum 100 */
      precipitation_probability?: number;
      precipitation?: number;
      code: string;
      sunrise?: string;
      sunset?: string;
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
