declare namespace drive {
  /**
   * Remove someone's access to a file (unshare).
   * Destructive: changes or deletes data. Idempotent.
   */
  function revoke_permission(args: RevokePermissionArgs): Promise<RevokePermissionResult>;
  interface RevokePermissionArgs {
    /** @minLength 1 */
    file_id: string;
    /** @minLength 1 */
    permission_id: string;
  }
  interface RevokePermissionResult {
    revoked: string;
  }
}
