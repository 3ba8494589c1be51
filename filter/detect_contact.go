package filter

import "strings"

// E-mail addresses and phone numbers.

func isLocalChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isDomainChar(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

// findEmails finds addresses shaped local@domain.tld: a local part of up
// to 64 characters without empty dot-separated parts, a domain of at least
// two labels of letters, digits and inner hyphens, and an alphabetic
// top-level domain of at least two letters (so "pkg@1.2.3" and
// "user@localhost" are not addresses).
func findEmails(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; {
		j := strings.IndexByte(s[i:], '@')
		if j < 0 {
			break
		}
		at := i + j
		i = at + 1
		// Scans are bounded by the longest local part and domain, so that
		// a long run of such characters costs linear time.
		l := at
		for l > 0 && at-l <= 64 && isLocalChar(s[l-1]) {
			l--
		}
		if l > 0 && isLocalChar(s[l-1]) {
			continue // local part too long
		}
		for l < at && (s[l] == '.' || s[l] == '-' || s[l] == '+') {
			l++
		}
		r := at + 1
		for r < len(s) && r-at <= 254 && isDomainChar(s[r]) {
			r++
		}
		if r < len(s) && isDomainChar(s[r]) {
			continue // domain too long
		}
		for r > at+1 && (s[r-1] == '.' || s[r-1] == '-') {
			r--
		}
		if !validLocal(s[l:at]) || !validDomain(s[at+1:r]) {
			continue
		}
		if s[l:at] == "git" && r < len(s) && s[r] == ':' {
			continue // git@host:owner/repo, an SSH remote
		}
		fd.add(Match{Class: ClassEmail, Detector: "email", Confidence: 0.9, Start: l, End: r})
		i = r
	}
}

func validLocal(local string) bool {
	if local == "" || len(local) > 64 || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return false
	}
	for i := 0; i < len(local); i++ {
		if isAlnum(local[i]) {
			return true
		}
	}
	return false
}

func validDomain(domain string) bool {
	if len(domain) < 4 || len(domain) > 253 {
		return false
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
	}
	tld := labels[len(labels)-1]
	if len(tld) < 2 || len(tld) > 24 {
		return false
	}
	for i := 0; i < len(tld); i++ {
		if !isAlpha(tld[i]) {
			return false
		}
	}
	return true
}

func isPhoneSep(c byte) bool { return c == ' ' || c == '-' || c == '.' }

// findPhonesE164 finds international numbers: '+', a country code that
// does not start with 0, then 8 to 15 digits in all, grouped by single
// spaces, hyphens, dots or parentheses, with a group of three digits or
// more unless there are ten digits or more.
func findPhonesE164(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; {
		j := strings.IndexByte(s[i:], '+')
		if j < 0 {
			break
		}
		p := i + j
		i = p + 1
		if (p > 0 && (isAlnum(s[p-1]) || s[p-1] == '+')) || p+1 >= len(s) || s[p+1] < '1' || s[p+1] > '9' {
			continue
		}
		end, digits, longest := p+1, 0, 0
		group, open := 0, false
		k := p + 1
		for k < len(s) {
			c := s[k]
			switch {
			case isDigit(c):
				digits++
				group++
				longest = max(longest, group)
				k++
				end = k
				continue
			case c == '(' && !open && k+1 < len(s) && isDigit(s[k+1]):
				open = true
			case c == ')' && open && group > 0:
				open = false
				end = k + 1
			case isPhoneSep(c) && group > 0 && k+1 < len(s) && (isDigit(s[k+1]) || s[k+1] == '('):
			case c == ' ' && k > 0 && s[k-1] == ')' && k+1 < len(s) && isDigit(s[k+1]):
			default:
				k = len(s) + 1 // stop
				continue
			}
			group = 0
			k++
		}
		if open || digits < 8 || digits > 15 || (longest < 3 && digits < 10) || !wordAfter(s, end) {
			continue
		}
		if end < len(s) && (s[end] == '.' || s[end] == '-') && end+1 < len(s) && isDigit(s[end+1]) {
			continue
		}
		fd.add(Match{Class: ClassPhone, Detector: "phone_e164", Confidence: 0.85, Start: p, End: end})
		i = end
	}
}

// findPhonesNational finds common national shapes without a country code:
// North American (415) 555-2671, 415-555-2671, 415.555.2671 or
// 415 555 2671, optionally after "1-"; and numbers with a trunk 0 such as
// 020 7946 0958, 01 23 45 67 89 or 06-12345678 (10 or 11 digits in at
// least two groups of two or more, one separator kind). Dates, versions,
// addresses and bare digit runs do not have these shapes.
func findPhonesNational(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; i++ {
		c := s[i]
		if !(isDigit(c) || c == '(') || !phoneStart(s, i) {
			continue
		}
		if end, ok := matchNANP(s, i); ok {
			fd.add(Match{Class: ClassPhone, Detector: "phone_national", Confidence: 0.75, Start: i, End: end})
			i = end - 1
			continue
		}
		if end, ok := matchTrunk(s, i); ok {
			fd.add(Match{Class: ClassPhone, Detector: "phone_national", Confidence: 0.6, Start: i, End: end})
			i = end - 1
		}
	}
}

func phoneStart(s string, i int) bool {
	if i == 0 {
		return true
	}
	p := s[i-1]
	return !isAlnum(p) && p != '+' && p != '.' && p != '-' && p != '/' && p != ':' && p != ','
}

// phoneEnd reports whether a number may end at i: no letter or digit
// follows, nor a separator that continues with a digit.
func phoneEnd(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	if isAlnum(s[i]) {
		return false
	}
	if (isPhoneSep(s[i]) || s[i] == '/' || s[i] == ',') && i+1 < len(s) && isDigit(s[i+1]) {
		return false
	}
	return true
}

func digitsAt(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for k := i; k < i+n; k++ {
		if !isDigit(s[k]) {
			return false
		}
	}
	return true
}

func matchNANP(s string, i int) (int, bool) {
	if end, ok := matchNANPBody(s, i); ok {
		return end, true
	}
	if s[i] == '1' && i+1 < len(s) && isPhoneSep(s[i+1]) {
		return matchNANPBody(s, i+2)
	}
	return 0, false
}

func matchNANPBody(s string, i int) (int, bool) {
	j := i
	var sep byte
	if j < len(s) && s[j] == '(' {
		if !digitsAt(s, j+1, 3) || j+4 >= len(s) || s[j+4] != ')' {
			return 0, false
		}
		j += 5
		if j < len(s) && s[j] == ' ' {
			j++
		}
	} else {
		if !digitsAt(s, j, 3) || j+3 >= len(s) || !isPhoneSep(s[j+3]) {
			return 0, false
		}
		sep = s[j+3]
		j += 4
	}
	area := s[i:j]
	if area[0] == '(' {
		area = area[1:]
	}
	if area[0] < '2' {
		return 0, false
	}
	if !digitsAt(s, j, 3) || j+3 >= len(s) || s[j] < '2' {
		return 0, false
	}
	c := s[j+3]
	if !isPhoneSep(c) || (sep != 0 && c != sep) {
		return 0, false
	}
	j += 4
	if !digitsAt(s, j, 4) || !phoneEnd(s, j+4) {
		return 0, false
	}
	return j + 4, true
}

func matchTrunk(s string, i int) (int, bool) {
	if s[i] != '0' || i+1 >= len(s) || s[i+1] == '0' || !isDigit(s[i+1]) {
		return 0, false
	}
	var sep byte
	digits, groups, group := 0, 0, 0
	j := i
	for j < len(s) {
		c := s[j]
		if isDigit(c) {
			digits++
			group++
			j++
			continue
		}
		if (c == ' ' || c == '-' || c == '.') && group >= 2 && j+1 < len(s) && isDigit(s[j+1]) && (sep == 0 || c == sep) {
			sep = c
			groups++
			group = 0
			j++
			continue
		}
		break
	}
	if group < 2 {
		return 0, false
	}
	groups++
	if groups < 2 || digits < 10 || digits > 11 || !phoneEnd(s, j) {
		return 0, false
	}
	return j, true
}
