declare namespace jira {
  /**
   * List the sprints of a Scrum board: active, future or closed.
   * Read-only.
   */
  function list_sprints(args: ListSprintsArgs): Promise<ListSprintsResult>;
  interface ListSprintsArgs {
    /** @minimum 1 */
    board_id: number;
    /** @default ["active","future"] */
    state?: ("active" | "future" | "closed")[];
  }
  interface ListSprintsResult {
    sprints: {
      id: number;
      name: string;
      state: "active" | "future" | "closed";
      /** @format date-time */
      start?: string | null;
      /** @format date-time */
      end?: string | null;
      goal?: string;
    }[];
  }
}
