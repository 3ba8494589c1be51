declare namespace slack {
  /**
   * Find a workspace user by e-mail address or user id and get their profile.
   * Read-only.
   */
  function lookup_user(args?: LookupUserArgs): Promise<LookupUserResult>;
  /** @remarks Give exactly one of: email; user_id. */
  interface LookupUserArgs {
    /** @format email */
    email?: string;
    /** @pattern ^[UW][A-Z0-9]+$ */
    user_id?: string;
  }
  interface LookupUserResult {
    id: string;
    name: string;
    real_name?: string;
    /** @format email */
    email?: string;
    /** IANA time zone. */
    tz?: string;
    is_bot: boolean;
    status?: {
      text?: string;
      emoji?: string;
    };
  }
}
