package upstream

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
)

// sentValues are the sensitive values programs sent one server lately
// (the arguments' values the output filter hides: tools.SensitiveFrom),
// which what the server says outside its results — its stderr lines, its
// log notifications, its errors — is scrubbed of, as it is of its own
// configured secrets: a server may print what it was sent (issue 19,
// attack27 T7). Values are kept sentTTL after they were last sent, at
// most maxSentValues and maxSentBytes of them (the oldest go first).
//
// Scrubbing costs one pass of a replacer over each line; the replacer is
// rebuilt when more than maxRecent values came since it was, and the
// values newer than it are replaced one by one meanwhile.
type sentValues struct {
	now func() time.Time

	mu      sync.Mutex
	values  map[string]time.Time // value → when last sent
	bytes   int
	built   *strings.Replacer // of the values when it was built; nil: none
	recent  []string          // values added since built was, and their JSON forms
	expired time.Time         // when values last expired
}

const (
	sentTTL       = 10 * time.Minute
	maxSentValues = 1024
	maxSentBytes  = 256 << 10
	maxSentValue  = 4 << 10 // a longer value is not kept (its head is)
	minSent       = 4       // shorter values are not scrubbed: they would be everywhere
	maxRecent     = 32
)

func newSentValues() *sentValues {
	return &sentValues{now: time.Now, values: map[string]time.Time{}}
}

// add records values as sent now.
func (s *sentValues) add(values []string) {
	if s == nil || len(values) == 0 {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) < minSent {
			continue
		}
		v = cutBytes(v, maxSentValue)
		if _, ok := s.values[v]; ok {
			s.values[v] = now
			continue
		}
		v = strings.Clone(v)
		s.values[v] = now
		s.bytes += len(v)
		s.recent = append(s.recent, v)
		if b, err := json.Marshal(v); err == nil && string(b[1:len(b)-1]) != v {
			s.recent = append(s.recent, string(b[1:len(b)-1]))
		}
	}
	if full := len(s.values) > maxSentValues || s.bytes > maxSentBytes; full || now.Sub(s.expired) > time.Minute {
		s.expireLocked(now, full)
	}
	if len(s.recent) > 2*maxRecent {
		s.buildLocked()
	}
}

// expireLocked drops the values older than sentTTL and, when full, the
// oldest until a quarter of the bounds is free again, so that a full set
// is rebuilt once in many adds, not at each.
func (s *sentValues) expireLocked(now time.Time, full bool) {
	s.expired = now
	n := len(s.values)
	for v, t := range s.values {
		if now.Sub(t) > sentTTL {
			delete(s.values, v)
			s.bytes -= len(v)
		}
	}
	if full && (len(s.values) > maxSentValues*3/4 || s.bytes > maxSentBytes*3/4) {
		vs := make([]string, 0, len(s.values))
		for v := range s.values {
			vs = append(vs, v)
		}
		slices.SortFunc(vs, func(a, b string) int { return s.values[a].Compare(s.values[b]) })
		for _, v := range vs {
			if len(s.values) <= maxSentValues*3/4 && s.bytes <= maxSentBytes*3/4 {
				break
			}
			delete(s.values, v)
			s.bytes -= len(v)
		}
	}
	if len(s.values) != n {
		s.buildLocked()
	}
}

// buildLocked makes the replacer of every value held.
func (s *sentValues) buildLocked() {
	vs := make([]string, 0, len(s.values))
	for v := range s.values {
		vs = append(vs, v)
	}
	s.built = replacer(vs, minSent, true)
	s.recent = s.recent[:0]
}

// replace scrubs text of the values held.
func (s *sentValues) replace(text string) string {
	if s == nil {
		return text
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.values) == 0 {
		return text
	}
	if s.built != nil {
		text = s.built.Replace(text)
	}
	for _, v := range s.recent {
		text = strings.ReplaceAll(text, v, secretMark)
	}
	return text
}

// sentByPrincipal keeps each principal's sentValues apart: a principal's
// calls fill and evict only its own, and a line is scrubbed of every
// principal's. One set for all let bob's 80 calls of 4 KiB values push
// alice's password out, and the server's next line showed it raw
// (attack29 T7). At most maxSentPrincipals principals are kept, the one
// whose values came last the longest ago going first.
type sentByPrincipal struct {
	mu   sync.Mutex
	by   map[string]*sentValues
	last map[string]time.Time
}

const maxSentPrincipals = 64

func newSentByPrincipal() *sentByPrincipal {
	return &sentByPrincipal{by: map[string]*sentValues{}, last: map[string]time.Time{}}
}

// add records values as sent now by principal.
func (s *sentByPrincipal) add(principal string, values []string) {
	if s == nil || len(values) == 0 {
		return
	}
	s.mu.Lock()
	set := s.by[principal]
	if set == nil {
		if len(s.by) >= maxSentPrincipals {
			oldest := ""
			for p, t := range s.last {
				if oldest == "" || t.Before(s.last[oldest]) {
					oldest = p
				}
			}
			delete(s.by, oldest)
			delete(s.last, oldest)
		}
		set = newSentValues()
		s.by[principal] = set
	}
	s.last[principal] = time.Now()
	s.mu.Unlock()
	set.add(values)
}

// replace scrubs text of every principal's values.
func (s *sentByPrincipal) replace(text string) string {
	if s == nil {
		return text
	}
	s.mu.Lock()
	sets := make([]*sentValues, 0, len(s.by))
	for _, set := range s.by {
		sets = append(sets, set)
	}
	s.mu.Unlock()
	for _, set := range sets {
		text = set.replace(text)
	}
	return text
}
