declare namespace crm {
  /** Create a sales deal for a company with amount, stage and expected close date. */
  function create_deal(args: CreateDealArgs): Promise<Deal>;
  interface CreateDealArgs {
    /** @minLength 1 @maxLength 200 */
    name: string;
    /** @minimum 0 */
    amount?: number;
    /** @default "EUR" @pattern ^[A-Z]{3}$ */
    currency?: string;
    /** @default "qualification" */
    stage?: "qualification" | "demo" | "proposal" | "negotiation";
    /** @format date */
    close_date?: string;
    company_id?: string;
    contact_ids?: string[];
    /** @format email */
    owner?: string;
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
