declare namespace db {
  /**
   * Apply a schema migration (DDL) inside a transaction, with a dry run first.
   * Destructive: changes or deletes data.
   */
  function begin_migration(args: BeginMigrationArgs): Promise<BeginMigrationResult>;
  interface BeginMigrationArgs {
    /** @minItems 1 @maxItems 50 */
    statements: string[];
    /** @default true */
    dry_run?: boolean;
    /** @default 3000 @minimum 100 @maximum 30000 */
    lock_timeout_ms?: number;
  }
  interface BeginMigrationResult {
    applied: boolean;
    locks: {
      table: string;
      mode: string;
    }[];
    duration_ms?: number;
  }
}
