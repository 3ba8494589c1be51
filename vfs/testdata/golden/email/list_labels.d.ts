declare namespace email {
  /**
   * List mailbox labels (folders) with unread and total counts.
   * Read-only.
   */
  function list_labels(args?: ListLabelsArgs): Promise<ListLabelsResult>;
  type ListLabelsArgs = Record<string, never>;
  interface ListLabelsResult {
    labels: {
      id: string;
      name: string;
      type: "system" | "user";
      unread?: number;
      total?: number;
    }[];
  }
}
