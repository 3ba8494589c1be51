package filter

import (
	"net/netip"
	"strings"
)

// IP addresses, validated with net/netip.

// findIPv4 finds dotted quads that net/netip accepts (no leading zeros, no
// octet above 255) and that stand alone: a run of more than four numbers
// (an OID, a long version) is skipped whole, and so is a quad after "v" or
// a word such as "version". Loopback, unspecified, broadcast and netmask
// addresses (255.x.x.x) carry no personal data and are left alone.
func findIPv4(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; i++ {
		if !isDigit(s[i]) || (i > 0 && (isAlnum(s[i-1]) || s[i-1] == '.' || s[i-1] == '-' || s[i-1] == '_')) {
			continue
		}
		// Collect the whole dotted run of numbers starting here.
		j, parts := i, 0
		for {
			k := j
			for k < len(s) && isDigit(s[k]) && k-j < 4 {
				k++
			}
			if k == j {
				break
			}
			parts++
			j = k
			if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
				j++
				continue
			}
			break
		}
		if parts != 4 || !wordAfter(s, j) || (j < len(s) && (s[j] == '-' || s[j] == '_')) {
			i = j
			continue
		}
		if versionBefore(s, i) {
			i = j
			continue
		}
		addr, err := netip.ParseAddr(s[i:j])
		if err != nil || !reportableIP(addr) {
			i = j
			continue
		}
		conf := 0.8
		if addr.IsPrivate() {
			conf = 0.7
		}
		fd.add(Match{Class: ClassIP, Detector: "ipv4", Confidence: conf, Start: i, End: j})
		i = j
	}
}

// versionBefore reports whether a version word comes right before i.
func versionBefore(s string, i int) bool {
	w := s[max(0, i-12):i]
	for _, v := range []string{"version", "ver ", "ver.", "release", "build", "firmware", "v. ", "rev "} {
		if indexFold(w, v) >= 0 {
			return true
		}
	}
	return false
}

func reportableIP(a netip.Addr) bool {
	if a.IsLoopback() || a.IsUnspecified() {
		return false
	}
	if a.Is4() {
		b := a.As4()
		return b[0] != 255
	}
	return true
}

// findIPv6 finds addresses with at least two colons and four hex digits
// that net/netip accepts, standing alone (not after a letter, digit or
// colon, so "std::map" and the time in "T12:30:45" are not addresses).
// MAC addresses and times do not parse as IPv6.
func findIPv6(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; i++ {
		c := s[i]
		if !(isHex(c) || c == ':') || (i > 0 && (isAlnum(s[i-1]) || s[i-1] == ':' || s[i-1] == '.' || s[i-1] == '_' || s[i-1] == '-')) {
			continue
		}
		j := i
		colons, hex := 0, 0
		for j < len(s) && (isHex(s[j]) || s[j] == ':' || s[j] == '.') {
			switch {
			case s[j] == ':':
				colons++
			case s[j] != '.':
				hex++
			}
			j++
		}
		end := j
		for end > i && s[end-1] == '.' {
			end--
		}
		if end > i+1 && s[end-1] == ':' && s[end-2] != ':' {
			end--
			colons--
		}
		if colons < 2 || hex < 4 || (j < len(s) && (isAlnum(s[j]) || s[j] == '_')) {
			i = j
			continue
		}
		cand := s[i:end]
		if !strings.Contains(cand, ":") || strings.HasSuffix(cand, "::") {
			// "2001:db8::" and "fe80::" name networks, not hosts.
			i = j
			continue
		}
		addr, err := netip.ParseAddr(cand)
		if err != nil || !reportableIP(addr) {
			i = j
			continue
		}
		fd.add(Match{Class: ClassIP, Detector: "ipv6", Confidence: 0.8, Start: i, End: end})
		i = j
	}
}
