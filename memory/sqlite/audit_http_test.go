package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"errors"
	"testing"
	"time"
)

func TestHTTPRequestsAudit(t *testing.T) {
	s := openTest(t, Config{})
	ctx := context.Background()
	if err := s.RecordHTTPRequests(ctx, memory.HTTPRequest{ExecutionID: "nope", Tool: "gh.x", Method: "GET", Host: "api.example"}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("a request of an unrecorded execution: %v", err)
	}
	if err := s.RecordExecution(ctx, memory.Execution{ID: "e1", Principal: "alice", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	want := []memory.HTTPRequest{
		{ExecutionID: "e1", Tool: "gh.issues_list", Method: "GET", Host: "api.example", Status: 429, Error: "rate_limited", Attempt: 1, Duration: 3 * time.Millisecond},
		{ExecutionID: "e1", Tool: "gh.issues_list", Method: "GET", Host: "api.example", Status: 200, Attempt: 2, Duration: 5 * time.Millisecond},
	}
	if err := s.RecordHTTPRequests(ctx, want...); err != nil {
		t.Fatal(err)
	}
	got, err := s.HTTPRequests(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Status != 429 || got[0].Error != "rate_limited" || got[1].Attempt != 2 || got[1].Duration != 5*time.Millisecond || got[0].Host != "api.example" {
		t.Fatalf("got %+v", got)
	}
}
