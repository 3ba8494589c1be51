declare namespace payments {
  /**
   * List invoices by customer and status (open, paid, overdue…).
   * Read-only.
   */
  function list_invoices(args?: ListInvoicesArgs): Promise<ListInvoicesResult>;
  interface ListInvoicesArgs {
    /** @pattern ^cus_ */
    customer?: string;
    status?: "draft" | "open" | "paid" | "uncollectible" | "void" | "overdue";
    /** @default 10 @minimum 1 @maximum 100 */
    limit?: number;
  }
  interface ListInvoicesResult {
    invoices: Invoice[];
    has_more: boolean;
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
