declare namespace payments {
  /** Create an invoice with line items for a customer and optionally send it. */
  function create_invoice(args: CreateInvoiceArgs): Promise<Invoice>;
  interface CreateInvoiceArgs {
    /** @pattern ^cus_ */
    customer: string;
    /** @pattern ^[a-z]{3}$ */
    currency: string;
    /** @minItems 1 @maxItems 250 */
    lines: {
      /** @minLength 1 */
      description: string;
      /** @default 1 @minimum 1 */
      quantity?: number;
      /** @minimum 0 */
      unit_amount: number;
    }[];
    /** @default 30 @minimum 0 @maximum 365 */
    days_until_due?: number;
    /** @default false */
    send?: boolean;
    memo?: string;
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
