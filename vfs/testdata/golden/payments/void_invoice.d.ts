declare namespace payments {
  /**
   * Void an open invoice so it can no longer be paid.
   * Destructive: changes or deletes data. Idempotent.
   */
  function void_invoice(args: VoidInvoiceArgs): Promise<Invoice>;
  interface VoidInvoiceArgs {
    /** @pattern ^in_ */
    id: string;
  }
  interface Invoice {
    /** @pattern ^in_ */
    id: string;
    customer: string;
    status: "draft" | "open" | "paid" | "uncollectible" | "void";
    total: Money;
    amount_due?: number;
    due_date?: number | null;
    lines?: {
      description: string;
      quantity?: number;
      amount: number;
    }[];
    /** @format uri */
    hosted_url?: string | null;
  }
  /** An amount in the currency's minor unit (cents for USD). */
  interface Money {
    /** Minor units, e.g. 1999 for $19.99. @minimum 0 */
    amount: number;
    /** ISO 4217 code in lower case. @pattern ^[a-z]{3}$ */
    currency: string;
  }
}
