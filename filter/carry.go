package filter

// Carrying what a flow knows into another: a dry run records a call whose
// arguments hold a secret the run read (under a field name that gave it
// away, or found by a detector), and a later run commits the call; the
// commit's outputs must hide that secret as the dry run's would have,
// though nothing in the committed arguments says what it is.

// Known is a sensitive value a flow received, with what the filter made
// of it.
type Known struct {
	Class      Class   `json:"c"`
	Confidence float64 `json:"p"`
	Value      string  `json:"v"`
}

// KnownIn returns the sensitive values the flow received that data (JSON,
// or any other text) holds — whole, inside longer strings, case-changed
// or encoded, as the output filter finds them — each once. The values are
// secrets: keep them as carefully as data itself.
func (fl *Flow) KnownIn(data []byte) []Known {
	if fl == nil {
		return nil
	}
	root, err := parseJSON(data)
	if err != nil {
		root = node{kind: kindString, str: string(data)}
	}
	fl.mu.RLock()
	defer fl.mu.RUnlock()
	if fl.sens.n == 0 {
		return nil
	}
	var (
		v    viewer
		out  []Known
		seen = map[int32]bool{}
		ixs  = []*valueIndex{&fl.sens}
	)
	v.dedupe = true
	look := func(s string) {
		v.plainOnly = false
		v.search(s, nil, ixs, fl.table(), false, func(m knownMatch) matchVerdict {
			if !seen[m.id] {
				seen[m.id] = true
				if info := fl.sensOf(m.id); info != nil {
					out = append(out, Known{Class: info.class, Confidence: info.conf, Value: info.raw})
				}
			}
			return matchNext
		})
	}
	var walk func(n *node)
	walk = func(n *node) {
		switch n.kind {
		case kindObject:
			for i := range n.kids {
				look(n.kids[i].key)
				walk(&n.kids[i])
			}
		case kindArray:
			for i := range n.kids {
				walk(&n.kids[i])
			}
		case kindString, kindNumber:
			look(n.str)
		}
	}
	walk(&root)
	return out
}

// ObserveKnown records values another flow knew to be sensitive (see
// KnownIn) as received from source, with the sources of from: the flow's
// outputs then hide them as that flow's would have. Values of a class the
// filter does not know are ignored.
func (fl *Flow) ObserveKnown(source string, known []Known, from Provenance) {
	if fl == nil || len(known) == 0 {
		return
	}
	need := 0
	for _, k := range known {
		need += valueCost(len(k.Value)) + sensCost(len(k.Value))
	}
	need = min(need, fl.maxBytes)
	if fl.reserve(need, nil) != nil {
		need = 0 // kept as far as FlowOptions.Keep holds, as past MaxBytes
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	defer fl.flushIndexes()
	fl.reserved -= need
	limit := fl.limit()
	srcs := fl.sourceBit(source)
	for _, s := range from.sources {
		srcs |= fl.sourceBit(s)
	}
	var buf []byte
	for _, k := range known {
		if !k.Class.known() || k.Value == "" {
			continue
		}
		sv := sensitiveValue{value: k.Value, class: k.Class, conf: min(max(k.Confidence, 0), 1), detector: "known_value"}
		fl.addValue(k.Value, srcs, &sv, &buf, len(known), limit, false)
	}
}
