declare namespace payments {
  /**
   * Find billing customers by e-mail, name or metadata.
   * Read-only.
   */
  function search_customers(args: SearchCustomersArgs): Promise<SearchCustomersResult>;
  function search_customers(query: string): Promise<SearchCustomersResult>;
  interface SearchCustomersArgs {
    /** @minLength 1 */
    query: string;
    /** @default 10 @minimum 1 @maximum 100 */
    limit?: number;
  }
  interface SearchCustomersResult {
    customers: Customer[];
    has_more: boolean;
  }
  interface Customer {
    /** @pattern ^cus_ */
    id: string;
    /** @format email */
    email?: string | null;
    name?: string | null;
    /** Credit (negative) or amount owed (positive), minor units. */
    balance?: number;
    currency?: string | null;
    delinquent: boolean;
    metadata?: Metadata;
    /** Unix seconds. */
    created: number;
  }
  /** Your own key-value pairs, kept on the object. @maxProperties 50 */
  type Metadata = { [key: string]: string };
}
