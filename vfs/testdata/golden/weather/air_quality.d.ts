declare namespace weather {
  /**
   * Get the air quality index and pollutant levels (PM2.5, PM10, ozone, NO2) for a place.
   * Read-only.
   */
  function air_quality(args: AirQualityArgs): Promise<AirQualityResult>;
  interface AirQualityArgs {
    location: Location;
  }
  interface AirQualityResult {
    european_aqi: number;
    us_aqi: number;
    /** µg/m³. */
    pollutants?: {
      pm2_5?: number;
      pm10?: number;
      o3?: number;
      no2?: number;
    };
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
