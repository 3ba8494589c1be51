declare namespace crm {
  /**
   * Find companies (accounts) in the CRM by name, domain, industry or size.
   * Read-only.
   */
  function search_companies(args?: SearchCompaniesArgs): Promise<SearchCompaniesResult>;
  function search_companies(query?: string): Promise<SearchCompaniesResult>;
  interface SearchCompaniesArgs {
    query?: string;
    /** @format hostname */
    domain?: string;
    industry?: string;
    /** @minimum 0 */
    min_employees?: number;
    /** @default 25 @minimum 1 @maximum 100 */
    limit?: number;
  }
  interface SearchCompaniesResult {
    companies: {
      id: string;
      name: string;
      domain?: string;
      industry?: string | null;
      employees?: number | null;
      annual_revenue?: number | null;
      address?: Address;
    }[];
  }
  interface Address {
    street?: string;
    city?: string;
    postal_code?: string;
    /** ISO 3166-1 alpha-2 code. @pattern ^[A-Z]{2}$ */
    country?: string;
  }
}
