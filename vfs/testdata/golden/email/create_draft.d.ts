declare namespace email {
  /** Save an e-mail as a draft to review before sending. */
  function create_draft(args: CreateDraftArgs): Promise<CreateDraftResult>;
  interface CreateDraftArgs {
    to?: Address[];
    subject?: string;
    body: string;
    /** Make it a reply draft in this thread. */
    thread_id?: string;
  }
  interface CreateDraftResult {
    draft_id: string;
  }
  interface Address {
    name?: string;
    /** @format email */
    email: string;
  }
}
