package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/tools"
)

const commitPlanDescription = `Commit a plan that execute_code {mode: "plan"} made: run exactly its recorded writes, in order, once, stopping at the first failure. The record gives each step's outcome (ok, error, not_run) and, when all ran, their results. A plan expires, is yours alone, and cannot be committed twice.`

const commitPlanInput = `{
	"type": "object",
	"properties": {
		"plan_id": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The plan_id of a dry run's record."},
		"budget_bytes": {"type": "integer", "minimum": 1024, "description": "Bytes of output."},
		"details": {"type": "boolean", "description": "Add each call and finding."}
	},
	"required": ["plan_id"],
	"additionalProperties": false
}`

func (s *Server) commitPlanTool() mcp.Tool {
	return mcp.Tool{
		Name:            "commit_plan",
		Description:     commitPlanDescription,
		RawInputSchema:  json.RawMessage(commitPlanInput),
		RawOutputSchema: json.RawMessage(executeCodeOutput),
		Annotations: mcp.ToolAnnotation{
			Title:          "Commit a plan",
			ReadOnlyHint:   mcp.ToBoolPtr(false),
			IdempotentHint: mcp.ToBoolPtr(false),
		},
	}
}

var commitPlanSchema = func() *tools.Schema {
	sc, err := tools.CompileSchema(json.RawMessage(commitPlanInput))
	if err != nil {
		panic(err)
	}
	return sc
}()

// commitPlan is the commit_plan handler. Like execute_code, every failure
// is a record with isError set and error.kind naming it.
func (s *Server) commitPlan(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		PlanID      string `json:"plan_id"`
		BudgetBytes int    `json:"budget_bytes"`
		Details     bool   `json:"details"`
	}
	if err := decodeArgs(commitPlanSchema, "commit_plan", req, &args); err != nil {
		return s.refused(executor.KindInvalidRequest, fmt.Sprintf(`%v. Send {"plan_id": "plan_..."}`, err)), nil
	}
	if r := s.limits.allowExecution(s.caller(ctx).Principal, s.isLocal(ctx)); r != nil {
		s.metrics.refusals.WithLabelValues(r.limit).Inc()
		return s.refused(KindRateLimited, r.Error()), nil
	}
	rec, body := s.Commit(ctx, args.PlanID, Execution{BudgetBytes: args.BudgetBytes, Details: args.Details})
	return toolResult(rec, body), nil
}
