package mcpserver

import (
	"net/http"

	"github.com/codecell/codecell/tools"
)

// metrics answers PathMetrics. Where principals are kept apart, each
// reads the series of codecell_tool_calls_total of the tools its toolset
// lets it see only, as /readyz lists only the sources it sees: a tool a
// toolset hides does not exist for its caller anywhere (issue 19,
// attack9's D8). A principal that sees every tool — a token of its own
// for Prometheus, with no toolset — reads every series; the others
// (runs, refusals, the pool, the process) are the server's and are the
// same for every principal.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	id, ok := identityFrom(r.Context())
	if !s.authRequired() || !ok {
		s.eng.Metrics().Handler().ServeHTTP(w, r)
		return
	}
	view := s.reg.View(tools.Caller{Principal: id.principal, Scopes: id.scopes})
	s.eng.Metrics().HandlerFor(func(tool string) bool {
		switch tool {
		case "(own tool)", "(unknown)": // engine.metricName's labels that name no tool
			return true
		}
		_, ok := view.Get(tool)
		return ok
	}).ServeHTTP(w, r)
}
