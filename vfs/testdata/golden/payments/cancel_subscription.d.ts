declare namespace payments {
  /**
   * Cancel a subscription now or at the end of the current billing period.
   * Destructive: changes or deletes data. Idempotent.
   */
  function cancel_subscription(args: CancelSubscriptionArgs): Promise<CancelSubscriptionResult>;
  interface CancelSubscriptionArgs {
    /** @pattern ^sub_ */
    id: string;
    /** @default true */
    at_period_end?: boolean;
    /** @default false */
    prorate?: boolean;
    reason?: "too_expensive" | "missing_features" | "switched_service" | "unused" | "other";
  }
  interface CancelSubscriptionResult {
    id: string;
    status: string;
    cancel_at?: number | null;
  }
}
