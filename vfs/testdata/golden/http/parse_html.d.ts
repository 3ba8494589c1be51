declare namespace http {
  /**
   * Fetch a web page and extract its readable text, title, links or elements by CSS selector.
   * Read-only.
   */
  function parse_html(args: ParseHtmlArgs): Promise<ParseHtmlResult>;
  interface ParseHtmlArgs {
    /** @format uri */
    url: string;
    /** CSS selector, e.g. "table.prices tr". */
    selector?: string;
    /** Attributes to return for each element, e.g. ["href"]. */
    attributes?: string[];
    /** @default 20000 @minimum 100 @maximum 200000 */
    max_chars?: number;
  }
  interface ParseHtmlResult {
    title: string;
    text?: string;
    elements?: {
      text: string;
      attrs?: { [key: string]: string };
    }[];
  }
}
