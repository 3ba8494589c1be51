package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/tools"
)

const commitPlanDescription = `Make the writes of a plan from execute_code {mode: "plan"}: in order, once, stopping at a failure.`

const commitPlanInput = `{
	"type": "object",
	"properties": {
		"plan_id": {"type": "string", "minLength": 1, "maxLength": 100}
	},
	"required": ["plan_id"],
	"additionalProperties": false
}`

func (s *Server) commitPlanTool() mcp.Tool {
	return mcp.Tool{
		Name:           "commit_plan",
		Description:    commitPlanDescription,
		RawInputSchema: json.RawMessage(commitPlanInput),
		// Like execute_code's, the hints' defaults (not read-only,
		// possibly destructive) are what a plan's writes may be.
		Annotations: mcp.ToolAnnotation{Title: "Commit a plan"},
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
		PlanID string `json:"plan_id"`
	}
	if err := decodeArgs(commitPlanSchema, "commit_plan", req, &args); err != nil {
		return s.refused(executor.KindInvalidRequest, fmt.Sprintf(`%v. Send {"plan_id": "plan_..."}`, err)), nil
	}
	if r := s.limits.allowExecution(ctx, s.caller(ctx).Principal, s.isLocal(ctx)); r != nil {
		s.metrics.refusals.WithLabelValues(r.limit).Inc()
		return s.refused(KindRateLimited, r.Error()), nil
	}
	rec, body := s.Commit(ctx, args.PlanID, Execution{})
	return toolResult(rec, body), nil
}
