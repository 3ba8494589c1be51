declare namespace drive {
  /** Share a file or folder with people, a group, a domain or anyone with the link. */
  function share_file(args: ShareFileArgs): Promise<ShareFileResult>;
  interface ShareFileArgs {
    /** @minLength 1 */
    file_id: string;
    type: "user" | "group" | "domain" | "anyone";
    /** For user and group. @format email */
    email?: string;
    /** For domain. @format hostname */
    domain?: string;
    role: Role;
    /** @default true */
    notify?: boolean;
    message?: string;
    /** @format date-time */
    expires?: string;
  }
  interface ShareFileResult {
    permission_id: string;
    role: Role;
    /** @format uri */
    web_url?: string;
  }
  type Role = "reader" | "commenter" | "writer" | "owner";
}
