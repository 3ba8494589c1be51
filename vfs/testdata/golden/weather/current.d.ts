declare namespace weather {
  /**
   * Get the current weather at a place: temperature, wind, humidity, conditions.
   * Read-only.
   */
  function current(args: CurrentArgs): Promise<CurrentResult>;
  interface CurrentArgs {
    location: Location;
    units?: Units;
  }
  interface CurrentResult {
    place: string;
    /** @format date-time */
    observed_at: string;
    conditions: Conditions;
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
  interface Conditions {
    temperature: number;
    feels_like?: number;
    /** @minimum 0 @maximum 100 */
    humidity?: number;
    /** @minimum 0 */
    wind_speed?: number;
    /** @minimum 0 @maximum 359 */
    wind_direction?: number;
    /** @minimum 0 */
    precipitation?: number;
    /** @minimum 0 @maximum 100 */
    cloud_cover?: number;
    code: "clear" | "partly_cloudy" | "cloudy" | "fog" | "drizzle" | "rain" | "snow" | "sleet" | "thunderstorm";
  }
}
