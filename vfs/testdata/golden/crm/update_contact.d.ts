declare namespace crm {
  /**
   * Change fields of a CRM contact such as stage, owner, title or custom properties.
   * Idempotent.
   */
  function update_contact(args: UpdateContactArgs): Promise<Contact>;
  interface UpdateContactArgs {
    /** @minLength 1 */
    id: string;
    first_name?: string;
    last_name?: string;
    phone?: string | null;
    title?: string | null;
    lifecycle_stage?: Stage;
    /** @format email */
    owner?: string;
    custom?: { [key: string]: string };
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
