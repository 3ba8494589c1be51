declare namespace crm {
  /**
   * List sales deals (opportunities) by pipeline stage, owner, company or close date.
   * Read-only.
   */
  function list_deals(args?: ListDealsArgs): Promise<ListDealsResult>;
  interface ListDealsArgs {
    stage?: ("qualification" | "demo" | "proposal" | "negotiation" | "closed_won" | "closed_lost")[];
    /** @format email */
    owner?: string;
    company_id?: string;
    /** @format date */
    close_before?: string;
    /** @format date */
    close_after?: string;
    /** @minimum 0 */
    min_amount?: number;
    /** @default 50 @minimum 1 @maximum 200 */
    limit?: number;
  }
  interface ListDealsResult {
    deals: Deal[];
    /** Sum of amounts of the listed deals, in the account currency. */
    total_amount?: number;
  }
  interface Deal {
    id: string;
    name: string;
    /** @minimum 0 */
    amount?: number;
    /** @pattern ^[A-Z]{3}$ */
    currency?: string;
    stage: "qualification" | "demo" | "proposal" | "negotiation" | "closed_won" | "closed_lost";
    /** @format date */
    close_date?: string | null;
    company_id?: string | null;
    contact_ids?: string[];
    owner?: string;
  }
}
