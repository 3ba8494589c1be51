declare namespace weather {
  /**
   * Turn a place name into coordinates, country and time zone (and back).
   * Read-only.
   */
  function geocode(args?: GeocodeArgs): Promise<GeocodeResult>;
  function geocode(query?: string): Promise<GeocodeResult>;
  /** @remarks Give exactly one of: query; lat and lon. */
  interface GeocodeArgs {
    /** @minLength 2 */
    query?: string;
    /** @minimum -90 @maximum 90 */
    lat?: number;
    /** @minimum -180 @maximum 180 */
    lon?: number;
    /** @default 5 @minimum 1 @maximum 10 */
    limit?: number;
    /** @default "en" @pattern ^[a-z]{2}$ */
    language?: string;
  }
  interface GeocodeResult {
    places: {
      name: string;
      lat: number;
      lon: number;
      country: string;
      time_zone?: string;
      population?: number | null;
    }[];
  }
}
