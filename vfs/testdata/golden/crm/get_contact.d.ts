declare namespace crm {
  /**
   * Get a CRM contact by id or e-mail with company, owner and custom fields.
   * Read-only.
   */
  function get_contact(args?: GetContactArgs): Promise<Contact>;
  /** @remarks Give at least one of: id; email. */
  interface GetContactArgs {
    /** @minLength 1 */
    id?: string;
    /** @format email */
    email?: string;
  }
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
  type Stage = "subscriber" | "lead" | "marketing_qualified" | "sales_qualified" | "opportunity" | "customer" | "churned";
  interface Address {
    street?: string;
    city?: string;
    postal_code?: string;
    /** ISO 3166-1 alpha-2 code. @pattern ^[A-Z]{2}$ */
    country?: string;
  }
}
