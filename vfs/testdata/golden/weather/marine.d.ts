declare namespace weather {
  /**
   * Get a marine forecast: wave height, swell, sea temperature for coastal waters.
   * Read-only.
   */
  function marine(args: MarineArgs): Promise<MarineResult>;
  function marine(lat: number, lon: number): Promise<MarineResult>;
  interface MarineArgs {
    /** @minimum -90 @maximum 90 */
    lat: number;
    /** @minimum -180 @maximum 180 */
    lon: number;
    /** @default 24 @minimum 1 @maximum 168 */
    hours?: number;
  }
  interface MarineResult {
    hours: {
      /** @format date-time */
      time: string;
      wave_height_m: number;
      swell_period_s?: number;
      sea_temperature?: number | null;
    }[];
  }
}
