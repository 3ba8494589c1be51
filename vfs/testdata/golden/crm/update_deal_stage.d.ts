declare namespace crm {
  /**
   * Move a deal to another pipeline stage, e.g. to closed won or closed lost.
   * Idempotent.
   */
  function update_deal_stage(args: UpdateDealStageArgs): Promise<Deal>;
  function update_deal_stage(id: string, stage: "qualification" | "demo" | "proposal" | "negotiation" | "closed_won" | "closed_lost"): Promise<Deal>;
  interface UpdateDealStageArgs {
    /** @minLength 1 */
    id: string;
    stage: "qualification" | "demo" | "proposal" | "negotiation" | "closed_won" | "closed_lost";
    lost_reason?: "price" | "competitor" | "no_budget" | "timing" | "no_decision" | "other";
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
