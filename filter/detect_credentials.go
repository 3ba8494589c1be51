package filter

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// Credentials: JWTs, PEM private keys, cloud and SaaS key formats, bearer
// and basic credentials, passwords in URLs, key=value assignments and
// high-entropy strings next to key-like words.

// findJWTs finds three base64url segments joined by dots whose first
// segment decodes to a JSON object with an "alg" member.
func findJWTs(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; {
		j := strings.Index(s[i:], "eyJ")
		if j < 0 {
			break
		}
		st := i + j
		i = st + 3
		if st > 0 && (isB64URL(s[st-1]) || s[st-1] == '.') {
			continue
		}
		h := runEnd(s, st, isB64URL)
		if h >= len(s) || s[h] != '.' {
			continue
		}
		p := runEnd(s, h+1, isB64URL)
		if p-(h+1) < 4 || p >= len(s) || s[p] != '.' {
			continue
		}
		sig := runEnd(s, p+1, isB64URL)
		if sig < len(s) && s[sig] == '.' {
			continue // five segments: a JWE, or something else
		}
		if !jwtHeader(s[st:h]) {
			continue
		}
		conf := 0.99
		if sig == p+1 {
			conf = 0.95 // unsigned ("alg":"none")
		}
		fd.add(Match{Class: ClassJWT, Detector: "jwt", Confidence: conf, Start: st, End: sig})
		i = sig
	}
}

func runEnd(s string, i int, in func(byte) bool) int {
	for i < len(s) && in(s[i]) {
		i++
	}
	return i
}

// runEndMax is runEnd that stops after n bytes.
func runEndMax(s string, i int, in func(byte) bool, n int) int {
	end := min(len(s), i+n)
	for i < end && in(s[i]) {
		i++
	}
	return i
}

// quotedEnd returns the end of a value quoted by q that starts at s[i]:
// the closing quote, a line break, or maxValueLen bytes on. A quote after
// a backslash is inside the value — `"pass":"winter\"autumn"` in JSON
// text is one password, not "winter\" and the rest shown (attack25 F6).
func quotedEnd(s string, i int, q byte) int {
	end := min(len(s), i+maxValueLen)
	for i < end && s[i] != q && s[i] != '\n' {
		if s[i] == '\\' && i+1 < end && s[i+1] != '\n' {
			i++
		}
		i++
	}
	return min(i, end)
}

// maxValueLen bounds the values the text detectors look at: scans stop
// there, which keeps every detector linear in the length of the string.
const maxValueLen = 4096

func jwtHeader(seg string) bool {
	if len(seg) > 2048 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return false
	}
	n, err := parseJSON(raw)
	if err != nil || n.kind != kindObject {
		return false
	}
	for i := range n.kids {
		if n.kids[i].key == "alg" && n.kids[i].kind == kindString {
			return true
		}
	}
	return false
}

// findPEM finds PEM blocks whose label names a private key (RSA, EC, DSA,
// OpenSSH, PKCS#8, encrypted, PGP). A block without its END line runs to
// the end of the string: a cut key is still a key.
func findPEM(s string, fd *detected) {
	const begin = "-----BEGIN "
	for i := 0; i < len(s) && !fd.full; {
		j := strings.Index(s[i:], begin)
		if j < 0 {
			break
		}
		st := i + j
		i = st + len(begin)
		l := strings.Index(s[i:], "-----")
		if l < 0 || l > 64 {
			continue
		}
		label := s[i : i+l]
		if !strings.Contains(label, "PRIVATE KEY") {
			continue
		}
		end := len(s)
		closing := "-----END " + label + "-----"
		if k := strings.Index(s[i+l:], closing); k >= 0 {
			end = i + l + k + len(closing)
		}
		fd.add(Match{Class: ClassPrivateKey, Detector: "private_key_pem", Confidence: 0.99, Start: st, End: end})
		i = end
	}
}

// prefixRule is a key format recognised by a fixed prefix.
type prefixRule struct {
	prefix   string
	detector string
	class    Class
	body     func(byte) bool
	min, max int // body length
	conf     float64
	// bodyOnly reports only the body: the prefix is a name, not secret.
	bodyOnly bool
	// check validates the body further.
	check func(s, body string) bool
}

func isAlnumByte(c byte) bool       { return isAlnum(c) }
func isUpperDigit(c byte) bool      { return isUpper(c) || isDigit(c) }
func isLetter(c byte) bool          { return isAlpha(c) }
func isB64(c byte) bool             { return isAlnum(c) || c == '+' || c == '/' || c == '=' }
func isAlnumDash(c byte) bool       { return isAlnum(c) || c == '-' }
func isAlnumUnderscore(c byte) bool { return isAlnum(c) || c == '_' }
func isURLB64(c byte) bool          { return isB64(c) || c == '%' }
func isHexLower(c byte) bool        { return isDigit(c) || (c >= 'a' && c <= 'f') }

func hasDigitAndLetter(_ string, body string) bool {
	d, l := false, false
	for i := 0; i < len(body); i++ {
		d = d || isDigit(body[i])
		l = l || isAlpha(body[i])
	}
	return d && l
}

var prefixRules = func() []prefixRule {
	var rules []prefixRule
	for _, p := range []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "APKA"} {
		rules = append(rules, prefixRule{prefix: p, detector: "aws_access_key", class: ClassCloudKey, body: isUpperDigit, min: 16, max: 16, conf: 0.95})
	}
	rules = append(rules,
		prefixRule{prefix: "AIza", detector: "gcp_api_key", class: ClassCloudKey, body: isB64URL, min: 35, max: 35, conf: 0.95},
		prefixRule{prefix: "ya29.", detector: "gcp_api_key", class: ClassCloudKey, body: isB64URL, min: 20, max: 4096, conf: 0.9},
		prefixRule{prefix: "AccountKey=", detector: "azure_key", class: ClassCloudKey, body: isB64, min: 40, max: 128, conf: 0.95, bodyOnly: true},
		prefixRule{prefix: "SharedAccessKey=", detector: "azure_key", class: ClassCloudKey, body: isB64, min: 40, max: 128, conf: 0.95, bodyOnly: true},
		prefixRule{prefix: "sig=", detector: "azure_key", class: ClassCloudKey, body: isURLB64, min: 20, max: 256, conf: 0.9, bodyOnly: true,
			check: func(s, _ string) bool { return strings.Contains(s, "sv=") }},
	)
	for _, p := range []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"} {
		rules = append(rules, prefixRule{prefix: p, detector: "github_token", class: ClassAPIKey, body: isAlnumByte, min: 36, max: 255, conf: 0.98})
	}
	rules = append(rules, prefixRule{prefix: "github_pat_", detector: "github_token", class: ClassAPIKey, body: isAlnumUnderscore, min: 22, max: 255, conf: 0.98})
	for _, p := range []string{"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe-", "xapp-"} {
		rules = append(rules, prefixRule{prefix: p, detector: "slack_token", class: ClassAPIKey, body: isAlnumDash, min: 10, max: 255, conf: 0.95})
	}
	rules = append(rules, prefixRule{prefix: "https://hooks.slack.com/services/", detector: "slack_token", class: ClassAPIKey,
		body: func(c byte) bool { return isAlnum(c) || c == '/' || c == '_' }, min: 20, max: 128, conf: 0.95})
	for _, p := range []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"} {
		rules = append(rules, prefixRule{prefix: p, detector: "stripe_key", class: ClassAPIKey, body: isAlnumByte, min: 10, max: 255, conf: 0.95})
	}
	rules = append(rules,
		prefixRule{prefix: "sk-", detector: "openai_key", class: ClassAPIKey, body: isB64URL, min: 20, max: 255, conf: 0.85, check: hasDigitAndLetter},
		prefixRule{prefix: "glpat-", detector: "saas_token", class: ClassAPIKey, body: isB64URL, min: 20, max: 255, conf: 0.95},
		prefixRule{prefix: "npm_", detector: "saas_token", class: ClassAPIKey, body: isAlnumByte, min: 36, max: 36, conf: 0.95},
		prefixRule{prefix: "hf_", detector: "saas_token", class: ClassAPIKey, body: isLetter, min: 30, max: 40, conf: 0.9},
		prefixRule{prefix: "SG.", detector: "saas_token", class: ClassAPIKey, body: func(c byte) bool { return isB64URL(c) || c == '.' }, min: 66, max: 66, conf: 0.95,
			check: func(_, body string) bool { return body[22] == '.' }},
		prefixRule{prefix: "pypi-AgEIcHlwaS5vcmc", detector: "saas_token", class: ClassAPIKey, body: isB64URL, min: 50, max: 512, conf: 0.95},
		prefixRule{prefix: "glsa_", detector: "saas_token", class: ClassAPIKey, body: isAlnumUnderscore, min: 32, max: 64, conf: 0.9},
		prefixRule{prefix: "dapi", detector: "saas_token", class: ClassAPIKey, body: isHexLower, min: 32, max: 32, conf: 0.9},
		prefixRule{prefix: "lin_api_", detector: "saas_token", class: ClassAPIKey, body: isAlnumByte, min: 40, max: 40, conf: 0.95},
		prefixRule{prefix: "sq0atp-", detector: "saas_token", class: ClassAPIKey, body: isB64URL, min: 22, max: 22, conf: 0.95},
		prefixRule{prefix: "sq0csp-", detector: "saas_token", class: ClassAPIKey, body: isB64URL, min: 43, max: 43, conf: 0.95},
		prefixRule{prefix: "AGE-SECRET-KEY-1", detector: "saas_token", class: ClassPrivateKey, body: isUpperDigit, min: 58, max: 58, conf: 0.98},
	)
	for _, p := range []string{"shpat_", "shpss_", "shpca_", "shppa_"} {
		rules = append(rules, prefixRule{prefix: p, detector: "saas_token", class: ClassAPIKey, body: isHex, min: 32, max: 32, conf: 0.95})
	}
	for _, p := range []string{"dop_v1_", "doo_v1_", "dor_v1_"} {
		rules = append(rules, prefixRule{prefix: p, detector: "saas_token", class: ClassAPIKey, body: isHexLower, min: 64, max: 64, conf: 0.95})
	}
	return rules
}()

// prefixByFirst indexes prefixRules by the first byte of their prefix.
var prefixByFirst = func() (t [256][]int) {
	for i, r := range prefixRules {
		t[r.prefix[0]] = append(t[r.prefix[0]], i)
	}
	return t
}()

// findPrefixed finds keys in the documented formats of AWS, GCP, Azure,
// GitHub, Slack, Stripe, OpenAI and other services: a fixed prefix at the
// start of a word, then a body of the right characters and length.
func findPrefixed(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; i++ {
		rules := prefixByFirst[s[i]]
		if len(rules) == 0 || (i > 0 && (isAlnum(s[i-1]) || s[i-1] == '_' || s[i-1] == '-')) {
			continue
		}
		for _, ri := range rules {
			r := &prefixRules[ri]
			if !strings.HasPrefix(s[i:], r.prefix) {
				continue
			}
			b := i + len(r.prefix)
			e := runEndMax(s, b, r.body, r.max+1)
			if n := e - b; n < r.min || n > r.max {
				continue
			}
			if e < len(s) && isAlnum(s[e]) {
				continue
			}
			if r.check != nil && !r.check(s, s[b:e]) {
				continue
			}
			st := i
			if r.bodyOnly {
				st = b
			}
			fd.add(Match{Class: r.class, Detector: r.detector, Confidence: r.conf, Start: st, End: e})
			i = e - 1
			break
		}
	}
}

func isTokenChar(c byte) bool {
	return isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '='
}

// findBearer finds the credential after "Bearer" (RFC 6750 token68 of ten
// characters or more with a digit or punctuation, so "Bearer
// authentication" is prose) and after "Basic" (base64 that decodes to
// user:password).
func findBearer(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; i++ {
		c := s[i] | 0x20
		if c != 'b' || !wordBefore(s, i) {
			continue
		}
		var basic bool
		switch {
		case hasPrefixFold(s[i:], "bearer"):
			i += len("bearer")
		case hasPrefixFold(s[i:], "basic"):
			i += len("basic")
			basic = true
		default:
			continue
		}
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j == i || j >= len(s) {
			continue
		}
		e := runEndMax(s, j, isTokenChar, maxValueLen)
		tok := s[j:e]
		if len(tok) < 10 || (e < len(s) && !isTokenEnd(s[e])) {
			continue
		}
		if basic {
			raw, err := base64.StdEncoding.DecodeString(tok)
			if err != nil || !strings.Contains(string(raw), ":") {
				continue
			}
		} else if !hasDigitOrPunct(tok) {
			continue
		}
		fd.add(Match{Class: ClassBearer, Detector: "bearer_credentials", Confidence: 0.95, Start: j, End: e})
		i = e - 1
	}
}

func isTokenEnd(c byte) bool {
	return !isAlnum(c) && c != '@' && c != '%'
}

func hasDigitOrPunct(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAlpha(s[i]) {
			return true
		}
	}
	return false
}

// findURLPasswords finds the password in scheme://user:password@host.
func findURLPasswords(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		sep := i + j
		i = sep + 3
		if sep == 0 || !isAlpha(s[sep-1]) {
			continue
		}
		u := i
		for u < len(s) && !strings.ContainsRune("@/?#\"'<> \t\r\n", rune(s[u])) {
			u++
		}
		if u >= len(s) || s[u] != '@' {
			continue
		}
		colon := strings.IndexByte(s[i:u], ':')
		if colon < 0 {
			continue
		}
		ps, pe := i+colon+1, u
		if pe-ps < 1 || placeholder(s[ps:pe]) {
			continue
		}
		fd.add(Match{Class: ClassPassword, Detector: "url_password", Confidence: 0.95, Start: ps, End: pe})
		i = u + 1
	}
}

// placeholder reports values that stand for a secret without being one:
// empty, masked, a variable reference, a template or a literal such as
// null.
func placeholder(v string) bool {
	if v == "" {
		return true
	}
	if t, ok := parseTokenAt(v, 0); ok && t.end == len(v) && t.redacted() && t.class.known() {
		return true // a redaction marker; a token is the run's to tell (run.ownTokens)
	}
	switch strings.ToLower(v) {
	case "null", "none", "nil", "true", "false", "undefined", "redacted", "hidden",
		"secret", "password", "changeme", "required", "optional", "string", "xxx", "n/a":
		return true
	}
	switch v[0] {
	case '$', '<', '{', '[', '%', '(':
		return true
	}
	for _, r := range v {
		if r != '*' && r != 'x' && r != 'X' && r != '.' && r != '•' && r != '#' {
			return false
		}
	}
	return true
}

func isNameChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

// assignable lists the classes a name=value pair in text can reveal;
// addresses, e-mails, phones, IPs and dates have their own detectors.
func assignable(c Class) bool {
	switch c {
	case ClassEmail, ClassPhone, ClassIP, ClassAddress, ClassDateOfBirth:
		return false
	}
	return true
}

var authSchemes = []string{"bearer", "basic", "token", "digest", "negotiate", "apikey", "key"}

// findAssignments finds values given to sensitive names in text:
// password=hunter2, "api_key": "…", Authorization: Bearer …, Password=…; in
// a connection string. The name is matched like a field name; the value
// runs to the closing quote, or to white space or punctuation.
func (sc *scanner) findAssignments(s string, fd *detected) {
	for k := 0; k < len(s) && !fd.full; k++ {
		c := s[k]
		if c != '=' && c != ':' {
			continue
		}
		// the name before the separator
		e := k
		for e > 0 && s[e-1] == ' ' && k-e < 2 {
			e--
		}
		if e > 0 && (s[e-1] == '"' || s[e-1] == '\'') {
			e--
		}
		st := e
		for st > 0 && isNameChar(s[st-1]) && e-st <= 64 {
			st--
		}
		for st < e && (s[st] == '-' || s[st] == '.') {
			st++
		}
		// A name starts with a letter or an underscore: "12:30" and
		// "2024-01-15T12:30" are times, not assignments.
		if st == e || e-st > 64 || !(isAlpha(s[st]) || s[st] == '_') {
			continue
		}
		fm, ok := sc.field(s[st:e])
		if !ok || !assignable(fm.Class) {
			continue
		}
		// the value after it
		v := k + 1
		if c == ':' && v < len(s) && s[v] == '/' {
			continue // a URL scheme
		}
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		if v >= len(s) {
			continue
		}
		var ve int
		if q := s[v]; q == '"' || q == '\'' {
			v++
			ve = quotedEnd(s, v, q)
		} else {
			ve = runEndMax(s, v, isUnquotedValue, maxValueLen)
		}
		val := s[v:ve]
		// Authorization: Bearer <credential>: the credential is the value.
		for _, scheme := range authSchemes {
			if strings.EqualFold(val, scheme) && ve < len(s) && s[ve] == ' ' {
				v = ve + 1
				ve = runEndMax(s, v, isTokenChar, maxValueLen)
				val = s[v:ve]
				break
			}
		}
		if placeholder(val) || !secretLike(fm.Class, val) {
			continue
		}
		fd.add(Match{Class: fm.Class, Detector: "key_assignment", Confidence: min(0.85, fm.Confidence), Start: v, End: ve})
		k = ve - 1
	}
}

func isUnquotedValue(b byte) bool {
	switch b {
	case '&', ';', ',', '"', '\'', '<', '>', '(', ')', '[', ']', '{', '}':
		return false
	}
	return b > ' '
}

// secretLike reports whether a value after a sensitive name looks like a
// value rather than a word of prose: PINs and CVVs need three digits or
// more, other values six characters, or four with a digit or symbol.
func secretLike(c Class, v string) bool {
	if c == ClassPIN || c == ClassCVV {
		return len(v) >= 3 && len(v) <= 8 && allDigits(v)
	}
	if len(v) >= 6 {
		return true
	}
	return len(v) >= 4 && hasDigitOrPunct(v)
}

// keyWords are the words that make a high-entropy string next to them a
// secret.
var keyWords = []string{"key", "secret", "token", "passw", "pwd", "credential", "auth", "bearer", "private", "signature"}

func isEntropyChar(c byte) bool {
	return isAlnum(c) || c == '+' || c == '/' || c == '=' || c == '_' || c == '-'
}

// findKeywordEntropy finds random-looking strings of 16 characters or
// more (letters and digits mixed, at least 3 bits of entropy per
// character, or 32 hex digits or more) that come within 32 bytes after a
// key-like word. A git SHA, a hex hash or a UUID alone is not a secret;
// after "secret:" or "api key" it is.
func findKeywordEntropy(s string, fd *detected) {
	for i := 0; i < len(s) && !fd.full; i++ {
		if !isEntropyChar(s[i]) || (i > 0 && isEntropyChar(s[i-1])) {
			continue
		}
		e := runEnd(s, i, isEntropyChar)
		if n := e - i; n >= 16 && n <= 512 && keyWordBefore(s, i) && randomLooking(s[i:e]) && !pathLike(s, i, e) {
			a, b := wordAround(s, i, e)
			fd.add(Match{Class: ClassSecret, Detector: "keyword_entropy", Confidence: 0.7, Start: a, End: b})
			e = b
		}
		i = e - 1
	}
}

// wordAround widens the run s[i:e] of entropy characters over the
// letters, digits and marks past ASCII next to it, and the runs beyond
// them: "Weißbier-Geheimnis-2024" is one secret, not "bier-Geheimnis-2024"
// after a head left shown (attack25 F8).
func wordAround(s string, i, e int) (int, int) {
	for i > 0 {
		if c := s[i-1]; c < utf8.RuneSelf {
			if !isEntropyChar(c) {
				break
			}
			i--
			continue
		}
		if !joinsBefore(s, i) {
			break
		}
		_, w := utf8.DecodeLastRuneInString(s[:i])
		i -= w
	}
	for e < len(s) {
		if c := s[e]; c < utf8.RuneSelf {
			if !isEntropyChar(c) {
				break
			}
			e++
			continue
		}
		if !joinsAfter(s, e) {
			break
		}
		_, w := utf8.DecodeRuneInString(s[e:])
		e += w
	}
	return i, e
}

// pathLike reports whether the run s[i:e] is a file system path: rooted
// at '/' (which "~/", "./" and "../" reach here as, since '~' and '.' end a
// run) or continuing a dot-directory ("/.config/…"), with two separators
// or more, no empty segment but a trailing one, and neither '+' nor '=',
// which standard base64 has. A test's or a Mac's temporary directory looks
// random, and file servers' errors put a key-like word near one
// ("/etc/passwd not in /tmp/TestRun3805623719/001"). A base64 secret
// passes all of this about once in 250 (a leading '/', a second, and no
// '+': 1/64 × 0.46 × 0.54).
func pathLike(s string, i, e int) bool {
	v := s[i:e]
	dotDir := i >= 2 && s[i-1] == '.' && s[i-2] == '/'
	if (v[0] != '/' && !dotDir) || strings.Count(v, "/") < 2 || strings.ContainsAny(v, "+=") {
		return false
	}
	return !strings.Contains(strings.TrimPrefix(v, "/"), "//")
}

func keyWordBefore(s string, i int) bool {
	w := s[max(0, i-32):i]
	for _, k := range keyWords {
		if indexFold(w, k) >= 0 {
			return true
		}
	}
	return false
}

func randomLooking(v string) bool {
	digits, letters, hex := 0, 0, true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isDigit(c):
			digits++
		case isAlpha(c):
			letters++
		}
		if !isHex(c) && c != '-' {
			hex = false
		}
	}
	if digits == 0 || letters == 0 {
		return false
	}
	if hex {
		return len(v) >= 32 && entropy(v) >= 3.0
	}
	return entropy(v) >= 3.0
}
