declare namespace payments {
  /**
   * List payments (charges) for a customer or a date range, newest first.
   * Read-only.
   */
  function list_charges(args?: ListChargesArgs): Promise<ListChargesResult>;
  interface ListChargesArgs {
    /** @pattern ^cus_ */
    customer?: string;
    status?: "succeeded" | "pending" | "failed";
    /** @minimum 0 */
    created_gte?: number;
    /** @minimum 0 */
    created_lt?: number;
    /** @default 10 @minimum 1 @maximum 100 */
    limit?: number;
    starting_after?: string;
  }
  interface ListChargesResult {
    charges: Charge[];
    has_more: boolean;
  }
  interface Charge {
    /** @pattern ^ch_ */
    id: string;
    customer?: string | null;
    amount: Money;
    amount_refunded?: number;
    status: "succeeded" | "pending" | "failed";
    failure_code?: string | null;
    description?: string | null;
    payment_method?: {
      type: "card" | "sepa_debit" | "ach_debit" | "wallet";
      brand?: string;
      /** @pattern ^[0-9]{4}$ */
      last4?: string;
    };
    created: number;
  }
  /** An amount in the currency's minor unit (cents for USD). */
  interface Money {
    /** Minor units, e.g. 1999 for $19.99. @minimum 0 */
    amount: number;
    /** ISO 4217 code in lower case. @pattern ^[a-z]{3}$ */
    currency: string;
  }
}
