declare namespace http {
  /**
   * GET a URL and return its JSON body, optionally picking a field with a JSON Pointer.
   * Read-only.
   */
  function get_json(args: GetJsonArgs): Promise<unknown>;
  function get_json(url: string, pointer?: string): Promise<unknown>;
  interface GetJsonArgs {
    /** @format uri */
    url: string;
    /** @default "" @pattern ^(/[^/]*)*$ */
    pointer?: string;
    headers?: Headers;
  }
  /** Header names to values. */
  type Headers = { [key: string]: string };
}
