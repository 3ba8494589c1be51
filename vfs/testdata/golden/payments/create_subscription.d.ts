declare namespace payments {
  /** Subscribe a customer to a recurring price (plan), with optional trial and quantity. */
  function create_subscription(args: CreateSubscriptionArgs): Promise<CreateSubscriptionResult>;
  interface CreateSubscriptionArgs {
    /** @pattern ^cus_ */
    customer: string;
    /** Recurring price id. @pattern ^price_ */
    price: string;
    /** @default 1 @minimum 1 */
    quantity?: number;
    /** @minimum 0 @maximum 730 */
    trial_days?: number;
    coupon?: string;
    metadata?: Metadata;
  }
  interface CreateSubscriptionResult {
    /** @pattern ^sub_ */
    id: string;
    status: "trialing" | "active" | "incomplete" | "past_due" | "canceled";
    current_period_end: number;
    trial_end?: number | null;
  }
  /** Your own key-value pairs, kept on the object. @maxProperties 50 */
  type Metadata = { [key: string]: string };
}
