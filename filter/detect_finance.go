package filter

// Payment cards, US social security numbers and IBANs.

// findCards finds 13 to 19 digits, plain or grouped by single spaces or
// hyphens in the printed shapes (4-4-4-4, 4-6-5, 4-6-4, 4-4-4-4-3), whose
// issuer prefix belongs to a card network and whose Luhn checksum holds. A
// 16-digit order number that fails Luhn, or a millisecond timestamp (which
// starts with 1), is not a card.
func findCards(s string, fd *detected) {
	var buf [19]byte
	for i := 0; i < len(s) && !fd.full; i++ {
		if !isDigit(s[i]) || (i > 0 && (isAlnum(s[i-1]) || s[i-1] == '.' || s[i-1] == '-' || s[i-1] == '_')) {
			continue
		}
		var (
			sep    byte
			groups [8]int
			ng     int
			n      int
			j      = i
			bad    bool
		)
		for j < len(s) {
			c := s[j]
			if isDigit(c) {
				if n == len(buf) {
					bad = true
					break
				}
				buf[n] = c
				n++
				groups[ng]++
				j++
				continue
			}
			if (c == ' ' || c == '-') && (sep == 0 || c == sep) && j+1 < len(s) && isDigit(s[j+1]) && ng < len(groups)-1 {
				sep = c
				ng++
				j++
				continue
			}
			break
		}
		start, end := i, j
		if bad {
			for end < len(s) && (isDigit(s[end]) || s[end] == sep) {
				end++
			}
			i = end
			continue
		}
		i = end - 1
		if n < 13 || !wordAfter(s, end) || (end < len(s) && (s[end] == '.' || s[end] == '_') && end+1 < len(s) && isDigit(s[end+1])) {
			continue
		}
		if ng > 0 && !cardGroups(groups[:ng+1]) {
			continue
		}
		digits := string(buf[:n])
		if !cardIIN(digits) || !luhn(digits) {
			continue
		}
		fd.add(Match{Class: ClassCard, Detector: "card_luhn", Confidence: 0.95, Start: start, End: end})
	}
}

func cardGroups(g []int) bool {
	switch len(g) {
	case 3:
		return g[0] == 4 && g[1] == 6 && (g[2] == 5 || g[2] == 4)
	case 4:
		return g[0] == 4 && g[1] == 4 && g[2] == 4 && g[3] >= 1 && g[3] <= 4
	case 5:
		return g[0] == 4 && g[1] == 4 && g[2] == 4 && g[3] == 4 && g[4] == 3
	}
	return false
}

// cardIIN reports whether the number's prefix and length belong to a
// card network: Visa, Mastercard, American Express, Discover, JCB,
// Diners Club, UnionPay or Maestro.
func cardIIN(d string) bool {
	n := len(d)
	p2 := int(d[0]-'0')*10 + int(d[1]-'0')
	p4 := p2*100 + int(d[2]-'0')*10 + int(d[3]-'0')
	switch d[0] {
	case '4':
		return n == 13 || n == 16 || n == 19
	case '2':
		return n == 16 && p4 >= 2221 && p4 <= 2720
	case '3':
		switch {
		case p2 == 34 || p2 == 37:
			return n == 15
		case p2 == 36 || p2 == 38 || p2 == 39 || (p4 >= 3000 && p4 <= 3059):
			return n >= 14 && n <= 19
		case p4 >= 3528 && p4 <= 3589:
			return n >= 16 && n <= 19
		}
		return false
	case '5':
		return (p2 >= 51 && p2 <= 55 && n == 16) || ((p2 == 50 || p2 >= 56) && n >= 12)
	case '6':
		return n >= 16 && n <= 19
	}
	return false
}

func luhn(d string) bool {
	sum := 0
	double := false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

// findSSNs finds US social security numbers written 078-05-1120 or
// 078 05 1120 that follow the issuing rules: the area is not 000, 666 or
// 900–999, the group not 00, the serial not 0000, and the number is not
// one of the two made public in advertising.
func findSSNs(s string, fd *detected) {
	for i := 0; i+11 <= len(s) && !fd.full; i++ {
		if !isDigit(s[i]) || (i > 0 && (isAlnum(s[i-1]) || s[i-1] == '-' || s[i-1] == '.' || s[i-1] == '+' || s[i-1] == '/')) {
			continue
		}
		sep := s[i+3]
		if (sep != '-' && sep != ' ') || s[i+6] != sep || !digitsAt(s, i, 3) || !digitsAt(s, i+4, 2) || !digitsAt(s, i+7, 4) {
			continue
		}
		end := i + 11
		if !wordAfter(s, end) || (end+1 < len(s) && (s[end] == '-' || s[end] == '.' || s[end] == sep) && isDigit(s[end+1])) {
			continue
		}
		area, group, serial := s[i:i+3], s[i+4:i+6], s[i+7:i+11]
		if area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000" {
			continue
		}
		if v := area + group + serial; v == "078051120" || v == "219099999" {
			continue
		}
		conf := 0.85
		if sep == ' ' {
			conf = 0.7
		}
		fd.add(Match{Class: ClassSSN, Detector: "ssn", Confidence: conf, Start: i, End: end})
		i = end - 1
	}
}

// ibanLengths is the length of the IBAN of each country that has one.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16,
	"BG": 22, "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22,
	"CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20,
	"EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22,
	"GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28,
	"IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30,
	"KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21,
	"LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27,
	"MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
	"PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
	"SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
	"SO": 23, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29,
	"VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// findIBANs finds IBANs, compact (DE89370400440532013000) or printed in
// groups of four (DE89 3704 0044 0532 0130 00), of the right length for
// their country and with a valid ISO 7064 mod-97 checksum.
func findIBANs(s string, fd *detected) {
	var buf [34]byte
	for i := 0; i+15 <= len(s) && !fd.full; i++ {
		if !isUpper(s[i]) || !isUpper(s[i+1]) || !isDigit(s[i+2]) || !isDigit(s[i+3]) || !wordBefore(s, i) {
			continue
		}
		want := ibanLengths[s[i:i+2]]
		if want == 0 {
			continue
		}
		n, j, spaced, group := 0, i, false, 0
		for j < len(s) && n < want {
			c := s[j]
			if isDigit(c) || isUpper(c) {
				buf[n] = c
				n++
				group++
				j++
				continue
			}
			if c == ' ' && group == 4 && (spaced || n == 4) && j+1 < len(s) && isAlnum(s[j+1]) {
				spaced = true
				group = 0
				j++
				continue
			}
			break
		}
		if n != want || !wordAfter(s, j) || !ibanChecksum(buf[:n]) {
			continue
		}
		fd.add(Match{Class: ClassIBAN, Detector: "iban", Confidence: 0.95, Start: i, End: j})
		i = j - 1
	}
}

// ibanChecksum checks ISO 7064 mod 97-10 over the IBAN with its first four
// characters moved to the end and letters as 10..35.
func ibanChecksum(iban []byte) bool {
	mod := 0
	add := func(c byte) {
		if isDigit(c) {
			mod = (mod*10 + int(c-'0')) % 97
			return
		}
		v := int(c-'A') + 10
		mod = (mod*100 + v) % 97
	}
	for _, c := range iban[4:] {
		add(c)
	}
	for _, c := range iban[:4] {
		add(c)
	}
	return mod == 1
}
