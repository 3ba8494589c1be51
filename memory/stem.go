package memory

// stem reduces an English word in lower case to its stem with Porter's
// algorithm (M. F. Porter, "An algorithm for suffix stripping", 1980), the
// same family as FTS5's porter tokenizer. Words of three letters or fewer
// and words with characters outside a-z are returned unchanged.
func stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	p := porter{b: []byte(w)}
	p.k = len(p.b) - 1
	p.step1ab()
	if p.k > 0 {
		p.step1c()
		p.step2()
		p.step3()
		p.step4()
		p.step5()
	}
	return string(p.b[:p.k+1])
}

// porter holds the word being stemmed: b[0..k] is the current word, j an
// offset set by ends.
type porter struct {
	b    []byte
	k, j int
}

// cons reports whether b[i] is a consonant.
func (p *porter) cons(i int) bool {
	switch p.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		if i == 0 {
			return true
		}
		return !p.cons(i - 1)
	}
	return true
}

// m counts the consonant-vowel sequences in b[0..j].
func (p *porter) m() int {
	n, i := 0, 0
	for {
		if i > p.j {
			return n
		}
		if !p.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i > p.j {
				return n
			}
			if p.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i > p.j {
				return n
			}
			if !p.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

// vowelInStem reports whether b[0..j] contains a vowel.
func (p *porter) vowelInStem() bool {
	for i := 0; i <= p.j; i++ {
		if !p.cons(i) {
			return true
		}
	}
	return false
}

// doublec reports whether b[j-1..j] is a double consonant.
func (p *porter) doublec(j int) bool {
	if j < 1 || p.b[j] != p.b[j-1] {
		return false
	}
	return p.cons(j)
}

// cvc reports whether b[i-2..i] is consonant-vowel-consonant and the last
// is not w, x or y.
func (p *porter) cvc(i int) bool {
	if i < 2 || !p.cons(i) || p.cons(i-1) || !p.cons(i-2) {
		return false
	}
	switch p.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether b[0..k] ends with s, and sets j before it.
func (p *porter) ends(s string) bool {
	n := len(s)
	if n > p.k+1 {
		return false
	}
	if string(p.b[p.k-n+1:p.k+1]) != s {
		return false
	}
	p.j = p.k - n
	return true
}

// setto replaces b[j+1..k] with s.
func (p *porter) setto(s string) {
	p.b = append(p.b[:p.j+1], s...)
	p.k = p.j + len(s)
}

func (p *porter) r(s string) {
	if p.m() > 0 {
		p.setto(s)
	}
}

func (p *porter) step1ab() {
	if p.b[p.k] == 's' {
		switch {
		case p.ends("sses"):
			p.k -= 2
		case p.ends("ies"):
			p.setto("i")
		case p.k >= 1 && p.b[p.k-1] != 's':
			p.k--
		}
	}
	p.b = p.b[:p.k+1]
	if p.ends("eed") {
		if p.m() > 0 {
			p.k--
		}
	} else if (p.ends("ed") || p.ends("ing")) && p.vowelInStem() {
		p.k = p.j
		p.b = p.b[:p.k+1]
		switch {
		case p.ends("at"):
			p.setto("ate")
		case p.ends("bl"):
			p.setto("ble")
		case p.ends("iz"):
			p.setto("ize")
		case p.doublec(p.k):
			p.k--
			switch p.b[p.k] {
			case 'l', 's', 'z':
				p.k++
			}
		default:
			p.j = p.k
			if p.m() == 1 && p.cvc(p.k) {
				p.setto("e")
			}
		}
	}
	p.b = p.b[:p.k+1]
}

func (p *porter) step1c() {
	if p.ends("y") && p.vowelInStem() {
		p.b[p.k] = 'i'
	}
}

func (p *porter) step2() {
	if p.k < 1 {
		return
	}
	for _, s := range step2Rules[p.b[p.k-1]] {
		if p.ends(s[0]) {
			p.r(s[1])
			return
		}
	}
}

var step2Rules = map[byte][][2]string{
	'a': {{"ational", "ate"}, {"tional", "tion"}},
	'c': {{"enci", "ence"}, {"anci", "ance"}},
	'e': {{"izer", "ize"}},
	'l': {{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}},
	'o': {{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}},
	's': {{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"}},
	't': {{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}},
	'g': {{"logi", "log"}},
}

func (p *porter) step3() {
	for _, s := range step3Rules[p.b[p.k]] {
		if p.ends(s[0]) {
			p.r(s[1])
			return
		}
	}
}

var step3Rules = map[byte][][2]string{
	'e': {{"icate", "ic"}, {"ative", ""}, {"alize", "al"}},
	'i': {{"iciti", "ic"}},
	'l': {{"ical", "ic"}, {"ful", ""}},
	's': {{"ness", ""}},
}

func (p *porter) step4() {
	if p.k < 1 {
		return
	}
	matched := false
	for _, s := range step4Rules[p.b[p.k-1]] {
		if p.ends(s) {
			if s == "ion" && !(p.j >= 0 && (p.b[p.j] == 's' || p.b[p.j] == 't')) {
				continue
			}
			matched = true
			break
		}
	}
	if matched && p.m() > 1 {
		p.k = p.j
		p.b = p.b[:p.k+1]
	}
}

var step4Rules = map[byte][]string{
	'a': {"al"},
	'c': {"ance", "ence"},
	'e': {"er"},
	'i': {"ic"},
	'l': {"able", "ible"},
	'n': {"ant", "ement", "ment", "ent"},
	'o': {"ion", "ou"},
	's': {"ism"},
	't': {"ate", "iti"},
	'u': {"ous"},
	'v': {"ive"},
	'z': {"ize"},
}

func (p *porter) step5() {
	p.j = p.k
	if p.b[p.k] == 'e' {
		a := p.m()
		if a > 1 || (a == 1 && !p.cvc(p.k-1)) {
			p.k--
		}
	}
	p.b = p.b[:p.k+1]
	if p.b[p.k] == 'l' && p.doublec(p.k) {
		p.j = p.k
		if p.m() > 1 {
			p.k--
		}
	}
	p.b = p.b[:p.k+1]
}
