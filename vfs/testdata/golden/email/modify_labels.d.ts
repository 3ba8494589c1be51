declare namespace email {
  /**
   * Add or remove labels on messages: archive, mark read/unread, star, move to a folder.
   * Idempotent.
   */
  function modify_labels(args: ModifyLabelsArgs): Promise<ModifyLabelsResult>;
  interface ModifyLabelsArgs {
    /** @minItems 1 @maxItems 1000 */
    message_ids: string[];
    add?: string[];
    remove?: string[];
  }
  interface ModifyLabelsResult {
    modified: number;
  }
}
