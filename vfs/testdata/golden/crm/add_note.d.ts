declare namespace crm {
  /** Attach a note to a contact, company or deal in the CRM. */
  function add_note(args: AddNoteArgs): Promise<AddNoteResult>;
  interface AddNoteArgs {
    record_type: "contact" | "company" | "deal";
    /** @minLength 1 */
    record_id: string;
    /** @minLength 1 @maxLength 65536 */
    body: string;
    /** @default false */
    pinned?: boolean;
  }
  interface AddNoteResult {
    id: string;
    /** @format date-time */
    created_at?: string;
  }
}
