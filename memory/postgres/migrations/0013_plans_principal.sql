-- A principal's live plans (planned, not expired), found by SavePlan to
-- sum their bytes against memory.Limits.MaxPrincipalPlanBytes.
CREATE INDEX plans_principal ON plans (principal, state, expires_at);
