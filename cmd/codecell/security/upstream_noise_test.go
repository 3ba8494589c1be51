package security

import (
	"strings"
	"testing"
	"time"
)

// TestUpstreamLogNotificationsAreThrottledAndScrubbed (issue 19, low): an
// upstream's log notifications were copied raw into codecell's log at
// debug level, as many as it sent. They are rate-limited now, cut, and
// scrubbed of what the filter's detectors find.
func TestUpstreamLogNotificationsAreThrottledAndScrubbed(t *testing.T) {
	t.Parallel()
	e := startEvil(t, "", nil, "--log-level", "debug")
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	const secret = "ghp_0123456789abcdefABCDEF0123456789abcd"
	const sent = 3000
	rec := alice.run(`await evil.log({n: 3000, text: "the token is `+secret+`"})`, "timeout_ms", 60000)
	if rec.Status != "ok" {
		t.Fatalf("log: %.600s", rec.raw)
	}
	// The last notifications are logged after the result; the count of
	// those left out a second after the first.
	time.Sleep(1500 * time.Millisecond)
	logged := 0
	for _, line := range strings.Split(e.stderr.String(), "\n") {
		if strings.Contains(line, "stream=log") && strings.Contains(line, "the token is") {
			logged++
		}
	}
	if strings.Contains(e.stderr.String(), secret) {
		t.Error("the token in a log notification reached codecell's log")
	}
	// A burst of 100, then 20 a second: a few hundred at most while the
	// notifications arrive, whatever the machine's speed.
	if logged == 0 || logged > sent/10 {
		t.Errorf("%d of %d log notifications logged", logged, sent)
	}
	if !strings.Contains(e.stderr.String(), "log notifications not logged") {
		t.Error("no line says how many notifications were not logged")
	}
	alice.normal()
}

// TestUpstreamToolWithABadNameIsSkipped (issue 19, low): one tool whose
// name held a newline, a NUL or 300 bytes made the whole upstream
// unavailable. Such a tool is skipped with a warning that names the
// upstream and why, and the others serve.
func TestUpstreamToolWithABadNameIsSkipped(t *testing.T) {
	t.Parallel()
	e := startEvil(t, "", map[string]string{"EVIL_BAD_NAMES": "1"})
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	log := e.stderr.String()
	if !strings.Contains(log, "skipped tools whose names cannot be registered") || !strings.Contains(log, "upstream=evil") {
		t.Errorf("no warning naming the upstream:\n%s", log)
	}
	if strings.Contains(log, "longlonglong") {
		t.Error("the warning quotes the bad name")
	}
}
