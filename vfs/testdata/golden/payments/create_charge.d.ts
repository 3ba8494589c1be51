declare namespace payments {
  /** Charge a customer's saved payment method a one-off amount. */
  function create_charge(args: CreateChargeArgs): Promise<Charge>;
  interface CreateChargeArgs {
    /** @pattern ^cus_ */
    customer: string;
    /** @minimum 50 @maximum 99999999 */
    amount: number;
    /** @pattern ^[a-z]{3}$ */
    currency: string;
    /** @maxLength 1000 */
    description?: string;
    /** Saved method id; the customer's default when omitted. */
    payment_method?: string;
    /** @minLength 1 @maxLength 255 */
    idempotency_key: string;
    metadata?: Metadata;
  }
  /** Your own key-value pairs, kept on the object. @maxProperties 50 */
  type Metadata = { [key: string]: string };
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
