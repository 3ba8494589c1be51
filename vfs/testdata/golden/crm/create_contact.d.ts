declare namespace crm {
  /** Add a new contact (person) to the CRM, optionally linked to a company. */
  function create_contact(args: CreateContactArgs): Promise<Contact>;
  interface CreateContactArgs {
    /** @format email */
    email: string;
    /** @maxLength 100 */
    first_name?: string;
    /** @maxLength 100 */
    last_name?: string;
    phone?: string;
    title?: string;
    company_id?: string;
    /** @default "lead" */
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
