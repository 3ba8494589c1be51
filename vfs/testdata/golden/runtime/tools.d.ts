declare namespace tools {
  /** Calls a tool by its qualified name, "category.tool". */
  function call(name: string, args?: Record<string, unknown>): Promise<unknown>;
  /**
   * Calls a list operation page after page and resolves to all its items,
   * at most opts.max (default 1000), the pages at most opts.maxBytes bytes
   * (default 8 MB; pagination_limit beyond). Each page is a call of the
   * operation: approvals, data-flow rules and dry runs apply page by page;
   * in a dry run, an operation that is not read-only resolves to its
   * Planned placeholder. Works for categories that provide a paginate tool
   * (OpenAPI sources).
   */
  function paginate(fn: ((args?: any) => Promise<unknown>) | string, args?: Record<string, unknown>, opts?: { max?: number; maxBytes?: number }): Promise<unknown[]>;
}
