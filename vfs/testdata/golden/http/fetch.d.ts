declare namespace http {
  /**
   * Make an HTTP request (GET, POST, PUT, PATCH, DELETE) to an allowed host and get status, headers and body.
   */
  function fetch(args: FetchArgs): Promise<Response>;
  function fetch(url: string): Promise<Response>;
  interface FetchArgs {
    /** @pattern ^https?:// @format uri */
    url: string;
    /** @default "GET" */
    method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD";
    headers?: Headers;
    /** Query parameters added to the URL. */
    query?: { [key: string]: string | number | boolean };
    /** Body sent as JSON; sets Content-Type. */
    json?: unknown;
    /** Raw body, when json is not used. */
    body?: string;
    /** @default 10000 @minimum 100 @maximum 30000 */
    timeout_ms?: number;
    /** @default 1048576 @minimum 1 @maximum 5242880 */
    max_bytes?: number;
  }
  /** Header names to values. */
  type Headers = { [key: string]: string };
  interface Response {
    /** @minimum 100 @maximum 599 */
    status: number;
    headers: Headers;
    /** Parsed JSON when the response is JSON, else text. */
    body: { [key: string]: unknown } | unknown[] | string | number | boolean | null;
    elapsed_ms?: number;
    truncated?: boolean;
  }
}
