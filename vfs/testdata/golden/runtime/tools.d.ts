declare namespace tools {
  /** Calls a tool by its qualified name, "category.tool". */
  function call(name: string, args?: Record<string, unknown>): Promise<unknown>;
  /**
   * Calls a list operation page after page and resolves to all its items,
   * at most opts.max. Works for categories that provide a paginate tool
   * (OpenAPI sources).
   */
  function paginate(fn: ((args?: any) => Promise<unknown>) | string, args?: Record<string, unknown>, opts?: { max?: number }): Promise<unknown[]>;
}
