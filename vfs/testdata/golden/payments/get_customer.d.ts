declare namespace payments {
  /**
   * Get a billing customer by id, with balance and delinquency.
   * Read-only.
   */
  function get_customer(args: GetCustomerArgs): Promise<Customer>;
  function get_customer(id: string): Promise<Customer>;
  interface GetCustomerArgs {
    /** @pattern ^cus_ */
    id: string;
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
