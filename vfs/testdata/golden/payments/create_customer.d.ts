declare namespace payments {
  /** Create a billing customer with e-mail, name and metadata. */
  function create_customer(args?: CreateCustomerArgs): Promise<Customer>;
  interface CreateCustomerArgs {
    /** @format email */
    email?: string;
    /** @maxLength 256 */
    name?: string;
    description?: string;
    metadata?: Metadata;
    /**
     * Repeat a call with the same key to get the same customer instead of a duplicate.
     * @maxLength 255
     */
    idempotency_key?: string;
  }
  /** Your own key-value pairs, kept on the object. @maxProperties 50 */
  type Metadata = { [key: string]: string };
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
}
