package security

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunsCannotOutliveTheirDeadline (issue 10, critical 1): built-ins that
// loop in C never see QuickJS's interrupt, so two such programs once pinned
// both sandboxes for ten minutes and everyone else was refused as busy.
// Each must end at its deadline, and the server must keep its capacity.
func TestRunsCannotOutliveTheirDeadline(t *testing.T) {
	t.Parallel()
	s := start(t, "--pool", "2")
	alice := s.open(t, aliceToken)
	const deadline = 1000 * time.Millisecond
	attacks := []string{
		`Array.prototype.indexOf.call({length: 2**53 - 1}, 1)`,
		`const a = []; a.length = 2**32 - 1; a.join()`,
		`Array.prototype.includes.call({length: 2**53 - 1}, 1)`,
		`const a = []; a.length = 2**32 - 1; a.reverse()`,
	}
	var wg sync.WaitGroup
	for _, code := range attacks {
		wg.Go(func() {
			ss := s.open(t, aliceToken)
			began := time.Now()
			rec := ss.run(code, "timeout_ms", deadline.Milliseconds())
			took := time.Since(began)
			if rec.Status != "error" || rec.Error.Kind != "timeout" {
				t.Errorf("%s: %.300s", code, rec.raw)
			}
			// The server's own measure of the run (its record) must be
			// within 100 ms of the deadline. The request around it also
			// waited for a sandbox and for the server to answer, which a
			// machine loaded by a whole test suite under -race delays by
			// seconds: it is held only to what the critical was about, a
			// sandbox pinned for minutes.
			queued := time.Duration(rec.Stats.QueueMS * float64(time.Millisecond))
			ran := time.Duration(rec.Stats.DurationMS*float64(time.Millisecond)) - queued
			if ran > deadline+100*time.Millisecond {
				t.Errorf("%s ran %s, %s past its %s deadline", code, ran, ran-deadline, deadline)
			}
			if took-queued > deadline+10*time.Second {
				t.Errorf("%s: the request took %s (%s queued)", code, took, queued)
			}
			t.Logf("%-55s ran %s, request %s (queued %s; deadline %s)", code, ran.Round(time.Millisecond), took.Round(time.Millisecond), queued.Round(time.Millisecond), deadline)
		})
	}
	wg.Wait()
	// Capacity is back: both sandboxes serve at once.
	began := time.Now()
	wg.Go(alice.normal)
	wg.Go(s.open(t, bobToken).normal)
	wg.Wait()
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("normal runs after the attacks took %s", d)
	}
}

// TestCancelledRunsEnd: a client that goes away ends its run, even one in
// a C loop, and frees its sandbox.
func TestCancelledRunsEnd(t *testing.T) {
	t.Parallel()
	s := start(t, "--pool", "1")
	alice := s.open(t, aliceToken)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, alice.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"Array.prototype.lastIndexOf.call({length: 2**53 - 1}, 1)","timeout_ms":60000}}}`))
	for k, v := range alice.header() {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(500 * time.Millisecond)
	cancel()
	<-done
	// The only sandbox is free again long before the run's 60 s deadline.
	began := time.Now()
	s.open(t, bobToken).normal()
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the next run waited %s for the cancelled one", d)
	}
}

// TestSkillsAreChargedToTheirCaller (issue 10, critical 3): a 20-wide,
// 2-deep self-calling skill that allocates once drove the server to 8.9 GB.
// Nested runs now share their caller's deadline and a bounded heap.
func TestSkillsAreChargedToTheirCaller(t *testing.T) {
	t.Parallel()
	s := start(t, "--pool", "2")
	alice := s.open(t, aliceToken)
	alice.run(`await skills.save({name: "fan", description: "Fans out.", code: ` + "`" +
		`const big = "x".repeat(32 << 20); if ((args.d || 0) >= 2) return big.length; const r = await Promise.all(Array.from({length: 20}, () => skills.fan({d: (args.d || 0) + 1}))); return r.length` +
		"`" + `}); 1`)
	began := time.Now()
	rec := alice.run(`await skills.fan({})`, "timeout_ms", 10000)
	if took := time.Since(began); took > 12*time.Second {
		t.Errorf("the fan-out ran %s, past its caller's 10 s deadline", took)
	}
	t.Logf("fan-out: %s (%.200s)", rec.Status, rec.raw)
	if rss := s.metric(t, "process_resident_memory_bytes"); rss > 1<<30 {
		t.Errorf("the server holds %.0f MiB after the fan-out", rss/(1<<20))
	}
	alice.normal()
}
