declare namespace jira {
  /** Log time spent on a Jira ticket (worklog), e.g. "2h 30m". */
  function log_work(args: LogWorkArgs): Promise<LogWorkResult>;
  interface LogWorkArgs {
    key: IssueKey;
    /** Duration such as "1d 2h". @pattern ^(\d+[wdhm]\s*)+$ */
    time_spent: string;
    /** @format date-time */
    started?: string;
    comment?: string;
  }
  interface LogWorkResult {
    id: string;
    time_spent_seconds: number;
  }
  /** Issue key such as OPS-142. @pattern ^[A-Z][A-Z0-9]+-[0-9]+$ */
  type IssueKey = string;
}
