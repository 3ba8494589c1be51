declare namespace http {
  /**
   * Check whether a URL is up: status, latency, TLS certificate expiry, redirects.
   * Read-only.
   */
  function check_url(args: CheckUrlArgs): Promise<CheckUrlResult>;
  function check_url(url: string): Promise<CheckUrlResult>;
  interface CheckUrlArgs {
    /** @format uri */
    url: string;
    /** @default 5000 @minimum 100 @maximum 30000 */
    timeout_ms?: number;
  }
  interface CheckUrlResult {
    up: boolean;
    status?: number | null;
    latency_ms?: number | null;
    final_url?: string;
    tls_days_left?: number | null;
  }
}
