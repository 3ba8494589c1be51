declare namespace payments {
  /**
   * Refund a payment in full or in part.
   * Destructive: changes or deletes data.
   */
  function refund_charge(args: RefundChargeArgs): Promise<RefundChargeResult>;
  interface RefundChargeArgs {
    /** @pattern ^ch_ */
    charge: string;
    /** Minor units; the full remaining amount when omitted. @minimum 1 */
    amount?: number;
    reason?: "duplicate" | "fraudulent" | "requested_by_customer";
    /** @minLength 1 */
    idempotency_key: string;
  }
  interface RefundChargeResult {
    /** @pattern ^re_ */
    id: string;
    charge: string;
    amount: Money;
    status: "pending" | "succeeded" | "failed";
  }
  /** An amount in the currency's minor unit (cents for USD). */
  interface Money {
    /** Minor units, e.g. 1999 for $19.99. @minimum 0 */
    amount: number;
    /** ISO 4217 code in lower case. @pattern ^[a-z]{3}$ */
    currency: string;
  }
}
