declare namespace payments {
  /**
   * Get the account balance: available and pending funds per currency.
   * Read-only.
   */
  function get_balance(args?: GetBalanceArgs): Promise<GetBalanceResult>;
  type GetBalanceArgs = Record<string, never>;
  interface GetBalanceResult {
    available: Money[];
    pending: Money[];
  }
  /** An amount in the currency's minor unit (cents for USD). */
  interface Money {
    /** Minor units, e.g. 1999 for $19.99. @minimum 0 */
    amount: number;
    /** ISO 4217 code in lower case. @pattern ^[a-z]{3}$ */
    currency: string;
  }
}
