package upstream

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSentValuesScrubLogs (issue 19, attack27 T7): what programs sent a
// server, as the gate says is sensitive, is replaced in its stderr lines
// and log notifications — as sent and in its JSON form —, within bounds.
func TestSentValuesScrubLogs(t *testing.T) {
	red := newRedactor(nil, nil)
	red.sent.add("alice", []string{"hunter2-Pw-9f8e7d6c5b4a", `pa"ss\wd-77`, "abc"})

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	tail := &stderrTail{max: 10}
	tail.read(strings.NewReader("TypeError while processing \"pw hunter2-Pw-9f8e7d6c5b4a\"\n"+`{"pw":"pa\"ss\\wd-77"} abc`+"\n"), "evil", log, red)
	got := buf.String()
	for _, secret := range []string{"hunter2-Pw-9f8e7d6c5b4a", `pa\"ss\\wd-77`} {
		if strings.Contains(got, secret) {
			t.Errorf("the stderr log shows %q:\n%s", secret, got)
		}
	}
	if !strings.Contains(got, "abc") || !strings.Contains(got, secretMark) {
		t.Errorf("want the values replaced by %s and a value shorter than %d bytes kept:\n%s", secretMark, minSent, got)
	}
	if s := tail.last(2, 500); strings.Contains(s, "hunter2") {
		t.Errorf("the exit reason's lines show the value: %s", s)
	}
	if s := logText(map[string]any{"msg": "login hunter2-Pw-9f8e7d6c5b4a"}, red, maxLogText); strings.Contains(s, "hunter2") {
		t.Errorf("a log notification shows the value: %s", s)
	}
}

// TestSentValuesBounds: the values kept are at most maxSentValues and
// maxSentBytes, the newest kept; a value unsent for sentTTL goes.
func TestSentValuesBounds(t *testing.T) {
	now := time.Unix(1e9, 0)
	s := newSentValues()
	s.now = func() time.Time { return now }
	s.add([]string{"old-secret-value"})
	for i := range maxSentValues + 100 {
		now = now.Add(time.Millisecond)
		s.add([]string{fmt.Sprintf("value-%06d", i)})
	}
	if len(s.values) > maxSentValues || s.bytes > maxSentBytes {
		t.Fatalf("%d values, %d bytes held; want at most %d, %d", len(s.values), s.bytes, maxSentValues, maxSentBytes)
	}
	last := fmt.Sprintf("value-%06d", maxSentValues+99)
	if got := s.replace("x " + last + " old-secret-value"); got != "x "+secretMark+" old-secret-value" {
		t.Fatalf("replace = %q; want the newest value replaced and the oldest evicted", got)
	}
	big := strings.Repeat("k", maxSentValue+10)
	s.add([]string{big})
	if s.bytes > maxSentBytes || strings.Contains(s.replace(big), big[:maxSentValue]) {
		t.Fatalf("a long value: %d bytes held, replaced %v", s.bytes, !strings.Contains(s.replace(big), big[:maxSentValue]))
	}
	now = now.Add(sentTTL + 2*time.Minute)
	s.add([]string{"fresh-value"})
	if len(s.values) != 1 || s.replace(last) != last {
		t.Fatalf("after sentTTL: %d values held; want only the fresh one", len(s.values))
	}
}

// BenchmarkSentValues: scrubbing a 2 KiB stderr line of the values held
// (none, 32, maxSentValues of 32 bytes), and adding a call's values.
func BenchmarkSentValues(b *testing.B) {
	line := strings.Repeat("TypeError: cannot read properties of undefined while processing a record ", 30)[:2048]
	for _, n := range []int{0, 32, maxSentValues} {
		s := newSentValues()
		for i := range n {
			s.add([]string{fmt.Sprintf("secret-value-%019d", i)})
		}
		b.Run(fmt.Sprintf("replace/%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				s.replace(line)
			}
		})
	}
	b.Run("add", func(b *testing.B) {
		s := newSentValues()
		i := 0
		for b.Loop() {
			i++
			s.add([]string{fmt.Sprintf("secret-value-%019d", i)})
		}
	})
}

// TestSentValuesApartByPrincipal (issue 19, attack29 T7): one principal's
// calls fill and evict only their own values: bob's 200 values of 4 KiB
// leave alice's password scrubbed, though they are more than one set
// holds.
func TestSentValuesApartByPrincipal(t *testing.T) {
	s := newSentByPrincipal()
	s.add("alice", []string{"hunter2-Pw-9f8e7d6c5b4a"})
	for i := range 200 {
		s.add("bob", []string{fmt.Sprintf("%04d", i) + strings.Repeat("b", maxSentValue-4)})
	}
	if got := s.replace("alice pw hunter2-Pw-9f8e7d6c5b4a"); strings.Contains(got, "hunter2") {
		t.Errorf("another principal's values pushed alice's out: %q", got)
	}
	last := "0199" + strings.Repeat("b", maxSentValue-4)
	if got := s.replace(last); got != secretMark {
		t.Errorf("bob's newest value is not scrubbed: %.40q", got)
	}
	for i := range maxSentPrincipals + 5 {
		s.add(fmt.Sprintf("p%d", i), []string{"some-value-of-p"})
	}
	if len(s.by) > maxSentPrincipals {
		t.Errorf("%d principals' sets kept, want at most %d", len(s.by), maxSentPrincipals)
	}
}
