declare namespace weather {
  /**
   * Get an hour-by-hour weather forecast for the next 1–168 hours.
   * Read-only.
   */
  function forecast_hourly(args: ForecastHourlyArgs): Promise<ForecastHourlyResult>;
  interface ForecastHourlyArgs {
    location: Location;
    /** @default 24 @minimum 1 @maximum 168 */
    hours?: number;
    units?: Units;
    /** @uniqueItems */
    variables?: ("temperature" | "precipitation" | "wind_speed" | "humidity" | "cloud_cover" | "uv_index")[];
  }
  interface ForecastHourlyResult {
    place: string;
    hours: ({
      /** @format date-time */
      time: string;
    } & { [key: string]: number })[];
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
