declare namespace drive {
  /**
   * List who has access to a file and with which role.
   * Read-only.
   */
  function list_permissions(args: ListPermissionsArgs): Promise<ListPermissionsResult>;
  interface ListPermissionsArgs {
    /** @minLength 1 */
    file_id: string;
  }
  interface ListPermissionsResult {
    permissions: {
      id: string;
      type: string;
      email?: string | null;
      role: Role;
      inherited?: boolean;
    }[];
  }
  type Role = "reader" | "commenter" | "writer" | "owner";
}
