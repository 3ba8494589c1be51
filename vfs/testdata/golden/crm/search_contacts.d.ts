declare namespace crm {
  /**
   * Search CRM contacts by name, e-mail, company or lifecycle stage.
   * Read-only.
   */
  function search_contacts(args?: SearchContactsArgs): Promise<SearchContactsResult>;
  function search_contacts(query?: string): Promise<SearchContactsResult>;
  interface SearchContactsArgs {
    /** Words to match in name, e-mail or company name. */
    query?: string;
    stage?: Stage;
    company_id?: string;
    /** @format email */
    owner?: string;
    /** @default 25 @minimum 1 @maximum 200 */
    limit?: number;
    /** Paging cursor from the previous result. */
    after?: string;
  }
  interface SearchContactsResult {
    contacts: Contact[];
    next?: string | null;
  }
  type Stage = "subscriber" | "lead" | "marketing_qualified" | "sales_qualified" | "opportunity" | "customer" | "churned";
  interface Contact {
    id: string;
    first_name?: string;
    last_name?: string;
    /** @format email */
    email: string;
    phone?: string | null;
    /** Job title. */
    title?: string | null;
    company_id?: string | null;
    lifecycle_stage: Stage;
    /** E-mail of the sales rep who owns the contact. */
    owner?: string | null;
    address?: Address;
    /** Custom properties by internal name. */
    custom?: { [key: string]: string };
    /** @format date-time */
    created_at?: string;
  }
  interface Address {
    street?: string;
    city?: string;
    postal_code?: string;
    /** ISO 3166-1 alpha-2 code. @pattern ^[A-Z]{2}$ */
    country?: string;
  }
}
