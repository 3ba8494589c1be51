package filter

import "slices"

// The last stage of a run with a Flow: every output (result, keys, log
// lines, texts) is searched for the sensitive values the flow saw in tool
// results and the values the run itself acted on, in every form the
// viewer sees (case or spacing changed, inside longer strings, base64,
// hex, URL encoding), after the detectors and the exact sweep. A value
// found is replaced by what replaces it elsewhere: its token, marker or
// mask; an encoded one takes its whole encoded run with it.

// localBase numbers the run's own values after the flow's.
const localBase = 1 << 30

// knownScan is the state of that stage for one run.
type knownScan struct {
	fl      *Flow
	local   valueIndex
	locals  []knownLocal
	v       viewer
	matches []knownMatch
	order   []int      // matches by start, then longest, then id
	infos   []sensInfo // what act needs of the flow's values matched, by order
	ixs     []*valueIndex
}

type knownLocal struct {
	pattern, long, value string
}

// newKnownScan returns the stage's state, or nil when the run has no
// flow or nothing to look for.
func (r *run) newKnownScan() *knownScan {
	if r.flow == nil || r.observing != nil {
		return nil
	}
	ks := &knownScan{fl: r.flow}
	values := make([]string, 0, len(r.values))
	for v := range r.values {
		values = append(values, v)
	}
	slices.Sort(values)
	fl := r.flow
	fl.mu.RLock()
	n := fl.sens.n
	for _, v := range values {
		p := foldString(v)
		if len(p) < minKnownLen {
			continue
		}
		if id, ok := fl.lookup(p[:min(len(p), maxPatternLen)]); ok && fl.values[id].sens > 0 {
			continue // the flow's index has it
		}
		kl := knownLocal{pattern: string(p[:min(len(p), maxPatternLen)]), value: v}
		if len(p) > maxPatternLen {
			kl.long = string(p)
		}
		ks.locals = append(ks.locals, kl)
		ks.local.add(kl.pattern, localBase+int32(len(ks.locals)-1), ks, len(values))
	}
	fl.mu.RUnlock()
	// The automata of the run's values of crowded heads, held as the
	// findings are before they are built.
	n8, count := 0, 0
	for _, p := range ks.local.pendPats {
		n8 += len(p)
		count++
	}
	if count > 0 && !r.automataRoom(acCost(n8, count)) {
		return nil
	}
	ks.local.flush()
	if n == 0 && ks.local.n == 0 {
		return nil
	}
	return ks
}

// pattern and full make knownScan the valueTable of both indexes; the
// flow's read lock is held.
func (ks *knownScan) pattern(id int32) string {
	if id >= localBase {
		return ks.locals[id-localBase].pattern
	}
	return ks.fl.values[id].pattern
}

func (ks *knownScan) full(id int32) string {
	if id >= localBase {
		return ks.locals[id-localBase].long
	}
	return ks.fl.table().full(id)
}

// knownSpans appends the replacements of the known values in s outside
// the regions in skip (ordered, not overlapping).
func (r *run) knownSpans(ks *knownScan, s string, skip []span, inKey bool, out []span) []span {
	if len(s) < minKnownLen {
		return out
	}
	ks.matches = ks.matches[:0]
	ks.infos = ks.infos[:0]
	fl := ks.fl
	fl.mu.RLock()
	ixs := ks.ixs[:0]
	if fl.sens.n > 0 {
		ixs = append(ixs, &fl.sens)
	}
	if ks.local.n > 0 {
		ixs = append(ixs, &ks.local)
	}
	ks.ixs = ixs
	ks.v.plainOnly = fl.seenLocked(s)&seenAsIs != 0
	// Of the matches at one start, the loop below takes the longest it
	// may (then the lowest id): one that overlaps skip, or whose class
	// the policy lets through, is passed over for the next. So only that
	// one is kept: values of every length from 6 to 256 bytes of one
	// letter found that many matches at each byte of a text of it, 9 GB
	// for 64 KB (attack14 I1's class). With Policy.AllowTools, whether a
	// value is let through depends on its sources, which are not read
	// under this lock: then every match is kept.
	prune := len(r.f.cfg.Policy.AllowTools) == 0
	ks.v.search(s, skip, ixs, ks, false, func(m knownMatch) matchVerdict {
		if !prune {
			ks.matches = append(ks.matches, m)
			return matchNext
		}
		if overlapsSpan(skip, m.start, m.end) {
			return matchNext
		}
		if m.id < localBase {
			if info := fl.sensOf(m.id); info.conf < r.f.cfg.Policy.MinConfidence || r.f.Action(info.class) == ActionAllow {
				return matchNext
			}
		}
		if n := len(ks.matches); n > 0 && ks.matches[n-1].start == m.start {
			if p := ks.matches[n-1]; m.end > p.end || (m.end == p.end && m.id < p.id) {
				ks.matches[n-1] = m
			}
			return matchTaken
		}
		ks.matches = append(ks.matches, m)
		return matchTaken
	})
	order := ks.order[:0]
	for i := range ks.matches {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		ma, mb := ks.matches[a], ks.matches[b]
		if ma.start != mb.start {
			return ma.start - mb.start
		}
		if ma.end != mb.end {
			return mb.end - ma.end
		}
		return int(ma.id - mb.id)
	})
	if prune {
		// Every match kept may be replaced (act below lets none through
		// without Policy.AllowTools): only the first at each start that
		// is not inside one taken before will be, so only its sensInfo is
		// copied — one a start was copied for a text of one letter.
		kept, last := order[:0], 0
		for _, i := range order {
			if m := ks.matches[i]; m.start >= last {
				kept = append(kept, i)
				last = m.end
			}
		}
		order = kept
	}
	ks.order = order
	for _, i := range order {
		if m := ks.matches[i]; m.id < localBase {
			ks.infos = append(ks.infos, *fl.sensOf(m.id))
		} else {
			ks.infos = append(ks.infos, sensInfo{})
		}
	}
	fl.mu.RUnlock()
	ref, last := 0, 0
	for k, i := range order {
		m := ks.matches[i]
		if m.start < last {
			continue // inside a match already taken
		}
		for ref < len(skip) && skip[ref].end <= m.start {
			ref++
		}
		if ref < len(skip) && skip[ref].start < m.end {
			continue // overlaps a token or an earlier replacement
		}
		var text string
		if m.id >= localBase {
			rep := r.values[ks.locals[m.id-localBase].value]
			text = rep.text
			r.record(rep.class, rep.conf, "known_value", rep.action, inKey)
		} else {
			info := ks.infos[k]
			t, ok := r.act(info.class, info.conf, "known_value", info.raw, false, inKey)
			if !ok {
				continue
			}
			text = t
		}
		out = append(out, span{start: m.start, end: m.end, text: text})
		last = m.end
	}
	return out
}

// knownText replaces the known values in s, outside the tokens and
// markers it holds.
func (r *run) knownText(ks *knownScan, s string, inKey bool) string {
	if len(s) < minKnownLen {
		return s
	}
	skip := r.ownTokens(r.skip[:0], s)
	r.skip = skip
	spans := r.knownSpans(ks, s, skip, inKey, r.spans[:0])
	r.spans = spans
	return assemble(s, spans)
}

// knownJob is the stage for a text with a budget.
func (r *run) knownJob(ks *knownScan, j *textJob, inKey bool) {
	skip := mergeSpans(j.spans, j.skip)
	more := r.knownSpans(ks, j.s[:j.window], skip, inKey, nil)
	j.spans = mergeSpans(j.spans, more)
}

// knownNode is the stage for every string, key and number of n.
func (r *run) knownNode(ks *knownScan, n *node) {
	r.rewriteNode(n, func(s string, inKey bool) string { return r.knownText(ks, s, inKey) })
}

// overlapsSpan reports whether [start, end) overlaps a region of spans
// (ordered, not overlapping).
func overlapsSpan(spans []span, start, end int) bool {
	k, _ := slices.BinarySearchFunc(spans, start, func(sp span, at int) int {
		if sp.end <= at {
			return -1
		}
		return 1
	})
	return k < len(spans) && spans[k].start < end
}
