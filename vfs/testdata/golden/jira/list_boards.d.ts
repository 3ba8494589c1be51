declare namespace jira {
  /**
   * List Jira boards, optionally for one project, with their type (scrum or kanban).
   * Read-only.
   */
  function list_boards(args?: ListBoardsArgs): Promise<ListBoardsResult>;
  interface ListBoardsArgs {
    /** @pattern ^[A-Z][A-Z0-9]+$ */
    project?: string;
    type?: "scrum" | "kanban";
  }
  interface ListBoardsResult {
    boards: {
      id: number;
      name: string;
      type: "scrum" | "kanban";
    }[];
  }
}
