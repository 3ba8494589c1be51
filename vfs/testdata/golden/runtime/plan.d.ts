/**
 * What a call of a tool that is not read-only returns in a dry run
 * (execute_code {code, mode: "plan"}): the call was recorded as step id of
 * the plan, not made. Reads run for real.
 */
interface Planned {
  planned: true;
  /** The step's number in the plan, from 1. */
  id: number;
}

/** The record's plan after a dry run: commit it with execute_code {plan_id}. */
interface PlanRecord {
  plan_id: string;
  /** After this (sandbox.plan_ttl after the dry run) the plan cannot be committed. */
  expires_at: string;
  /** The writes in order, their arguments filtered as any output. */
  steps: { step: number; tool: string; args: Record<string, unknown> }[];
}

/** The record's plan after a commit: each step's outcome. */
interface PlanOutcome {
  plan_id: string;
  steps: { step: number; tool: string; status: "ok" | "error" | "not_run"; error_code?: string }[];
}
