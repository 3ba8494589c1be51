package filter

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
)

// detectorCase is one string and what a detector must find in it: the
// exact texts of its matches, in order, or none.
type detectorCase struct {
	name string
	in   string
	want []string
}

// found returns the texts ScanString finds of class c by detector det.
func found(tb testing.TB, s string, c Class, det string) []string {
	tb.Helper()
	var out []string
	for _, m := range ScanString(s) {
		if m.Class == c && (det == "" || m.Detector == det) {
			out = append(out, s[m.Start:m.End])
		}
	}
	return out
}

func runDetectorCases(t *testing.T, c Class, det string, cases []detectorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := found(t, tc.in, c, det)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ScanString(%q) %s/%s = %q, want %q", tc.in, c, det, got, tc.want)
			}
		})
	}
}

func TestDetectEmail(t *testing.T) {
	t.Parallel()
	runDetectorCases(t, ClassEmail, "email", []detectorCase{
		{"plain", "ada@example.com", []string{"ada@example.com"}},
		{"in text", "write to ada.lovelace+news@mail.example.co.uk today", []string{"ada.lovelace+news@mail.example.co.uk"}},
		{"mailto", "mailto:bob_1@example.org.", []string{"bob_1@example.org"}},
		{"two", "a@example.com,b@example.net", []string{"a@example.com", "b@example.net"}},
		{"quoted in json text", `{"to":"ops@corp.example"}`, []string{"ops@corp.example"}},
		{"near miss: package version", "lodash@4.17.21", nil},
		{"near miss: no tld", "user@localhost", nil},
		{"near miss: mention", "thanks @ada and @bob", nil},
		{"near miss: scoped package", "@types/node@18.0.0", nil},
		{"near miss: one-letter tld", "a@b.c", nil},
		{"near miss: hyphen label", "a@-bad.example.com", nil},
		{"near miss: ssh remote", "git@github.com:owner/repo.git", nil},
	})
}

func TestDetectPhone(t *testing.T) {
	t.Parallel()
	runDetectorCases(t, ClassPhone, "", []detectorCase{
		{"e164 compact", "call +14155552671 now", []string{"+14155552671"}},
		{"e164 spaced", "tel: +44 20 7946 0958", []string{"+44 20 7946 0958"}},
		{"e164 parens", "+1 (415) 555-2671", []string{"+1 (415) 555-2671"}},
		{"e164 france", "+33 1 23 45 67 89", []string{"+33 1 23 45 67 89"}},
		{"nanp dashes", "office 415-555-2671.", []string{"415-555-2671"}},
		{"nanp parens", "(415) 555-2671", []string{"(415) 555-2671"}},
		{"nanp dots", "415.555.2671", []string{"415.555.2671"}},
		{"nanp with 1", "1-800-555-0199", []string{"1-800-555-0199"}},
		{"uk trunk", "020 7946 0958", []string{"020 7946 0958"}},
		{"fr trunk", "01 23 45 67 89", []string{"01 23 45 67 89"}},
		{"nl mobile", "06-12345678", []string{"06-12345678"}},
		{"near miss: date", "2024-01-15", nil},
		{"near miss: iso time", "2024-01-15T12:30:45Z", nil},
		{"near miss: ip", "192.168.100.200", nil},
		{"near miss: isbn", "ISBN 978-3-16-148410-0", nil},
		{"near miss: bare digits", "order 4155552671", nil},
		{"near miss: version", "v1.22.333.4444", nil},
		{"near miss: ssn shape", "078-05-1120", nil},
		{"near miss: card", "4111 1111 1111 1111", nil},
		{"near miss: short e164", "+123 45", nil},
		{"near miss: nanp area 1xx", "123-456-7890", nil},
		{"near miss: math", "3+4155552671", nil},
		{"near miss: dotted date", "01.02.2023", nil},
	})
}

func TestDetectCard(t *testing.T) {
	t.Parallel()
	runDetectorCases(t, ClassCard, "card_luhn", []detectorCase{
		{"visa", "4111111111111111", []string{"4111111111111111"}},
		{"visa spaced", "card 4111 1111 1111 1111 exp 12/29", []string{"4111 1111 1111 1111"}},
		{"mastercard dashed", "5500-0000-0000-0004", []string{"5500-0000-0000-0004"}},
		{"mastercard 2-series", "2221000000000009", []string{"2221000000000009"}},
		{"amex grouped", "3782 822463 10005", []string{"3782 822463 10005"}},
		{"amex", "378282246310005", []string{"378282246310005"}},
		{"discover", "6011111111111117", []string{"6011111111111117"}},
		{"jcb", "3530111333300000", []string{"3530111333300000"}},
		{"diners", "30569309025904", []string{"30569309025904"}},
		{"in json text", `{"pan":"4012888888881881"}`, []string{"4012888888881881"}},
		{"near miss: order number fails luhn", "order 4111111111111112", nil},
		{"near miss: 16 digits bad prefix", "1234567812345670", nil},
		{"near miss: ms timestamp", "1700000000000", nil},
		{"near miss: too long", "41111111111111111111", nil},
		{"near miss: odd grouping", "41 1111 1111 1111 11", nil},
		{"near miss: mixed separators", "4111-1111 1111-1111", nil},
		{"near miss: inside identifier", "id4111111111111111", nil},
		{"near miss: decimal", "0.4111111111111111", nil},
		{"near miss: amex length", "3711111111111111", nil},
	})
}

func TestDetectSSN(t *testing.T) {
	t.Parallel()
	runDetectorCases(t, ClassSSN, "ssn", []detectorCase{
		{"dashed", "SSN 123-45-6789", []string{"123-45-6789"}},
		{"spaced", "ssn: 123 45 6789.", []string{"123 45 6789"}},
		{"in sentence", "her number is 536-22-1234, please", []string{"536-22-1234"}},
		{"near miss: area 000", "000-12-3456", nil},
		{"near miss: area 666", "666-12-3456", nil},
		{"near miss: area 9xx", "912-12-3456", nil},
		{"near miss: group 00", "123-00-4567", nil},
		{"near miss: serial 0000", "123-45-0000", nil},
		{"near miss: advertised", "078-05-1120", nil},
		{"near miss: mixed separators", "123-45 6789", nil},
		{"near miss: longer number", "123-45-67890", nil},
		{"near miss: part of dashed id", "9-123-45-6789", nil},
		{"near miss: undashed", "123456789", nil},
	})
}

func TestDetectIBAN(t *testing.T) {
	t.Parallel()
	runDetectorCases(t, ClassIBAN, "iban", []detectorCase{
		{"de compact", "DE89370400440532013000", []string{"DE89370400440532013000"}},
		{"de grouped", "IBAN: DE89 3704 0044 0532 0130 00.", []string{"DE89 3704 0044 0532 0130 00"}},
		{"gb", "GB82WEST12345698765432", []string{"GB82WEST12345698765432"}},
		{"fr grouped", "FR14 2004 1010 0505 0001 3M02 606", []string{"FR14 2004 1010 0505 0001 3M02 606"}},
		{"no shortest", "NO9386011117947", []string{"NO9386011117947"}},
		{"near miss: checksum", "DE00370400440532013000", nil},
		{"near miss: wrong length", "DE8937040044053201300", nil},
		{"near miss: unknown country", "ZZ89370400440532013000", nil},
		{"near miss: lower case", "de89370400440532013000", nil},
		{"near miss: inside word", "XDE89370400440532013000", nil},
	})
}

func TestDetectIP(t *testing.T) {
	t.Parallel()
	runDetectorCases(t, ClassIP, "", []detectorCase{
		{"v4", "client 203.0.113.7 connected", []string{"203.0.113.7"}},
		{"v4 private", "host=10.1.2.3", []string{"10.1.2.3"}},
		{"v4 cidr", "allow 198.51.100.0/24", []string{"198.51.100.0"}},
		{"v4 port", "8.8.8.8:53", []string{"8.8.8.8"}},
		{"v6", "from 2001:db8::ff00:42:8329 ok", []string{"2001:db8::ff00:42:8329"}},
		{"v6 full", "2001:0db8:85a3:0000:0000:8a2e:0370:7334", []string{"2001:0db8:85a3:0000:0000:8a2e:0370:7334"}},
		{"v6 link local", "fe80::1ff:fe23:4567:890a.", []string{"fe80::1ff:fe23:4567:890a"}},
		{"v6 bracketed", "http://[2001:db8::1]:8080/", []string{"2001:db8::1"}},
		{"near miss: version 3 parts", "version 1.2.3", nil},
		{"near miss: v-prefixed", "v1.2.3.4", nil},
		{"near miss: version word", "version 1.2.3.4", nil},
		{"near miss: oid", "1.3.6.1.4.1.311", nil},
		{"near miss: octet > 255", "256.1.1.1", nil},
		{"near miss: leading zero", "01.02.03.04", nil},
		{"near miss: date", "2024.01.15", nil},
		{"near miss: loopback", "127.0.0.1", nil},
		{"near miss: unspecified", "0.0.0.0", nil},
		{"near miss: netmask", "255.255.255.0", nil},
		{"near miss: time", "12:30:45", nil},
		{"near miss: iso time", "2024-01-15T12:30:45Z", nil},
		{"near miss: mac", "00:1A:2B:3C:4D:5E", nil},
		{"near miss: c++", "std::vector<int> a::b", nil},
		{"near miss: v6 loopback", "::1", nil},
		{"near miss: v6 network", "route 2001:db8:: via eth0", nil},
		{"near miss: uuid", "123e4567-e89b-12d3-a456-426614174000", nil},
	})
}

func jwtOf(header, payload, sig string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." + sig
}

func TestDetectJWT(t *testing.T) {
	t.Parallel()
	jwt := jwtOf(`{"alg":"HS256","typ":"JWT"}`, `{"sub":"1234567890","name":"Ada"}`, "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
	unsigned := jwtOf(`{"alg":"none"}`, `{"sub":"1"}`, "")
	noAlg := jwtOf(`{"typ":"JWT"}`, `{"sub":"1"}`, "abc")
	runDetectorCases(t, ClassJWT, "jwt", []detectorCase{
		{"bare", jwt, []string{jwt}},
		{"in header", "Cookie: session=" + jwt + "; Path=/", []string{jwt}},
		{"unsigned", "t=" + unsigned + " end", []string{unsigned}},
		{"near miss: header without alg", noAlg, nil},
		{"near miss: not base64 json", "eyJhbGciOi.notjson.sig", nil},
		{"near miss: two segments", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0", nil},
		{"near miss: five segments (JWE)", jwt + ".more.parts", nil},
	})
}

func TestDetectPEM(t *testing.T) {
	t.Parallel()
	rsa := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
	ossh := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----"
	cut := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
	runDetectorCases(t, ClassPrivateKey, "private_key_pem", []detectorCase{
		{"rsa", "key:\n" + rsa + "\nend", []string{rsa}},
		{"openssh", ossh, []string{ossh}},
		{"cut off", "x " + cut, []string{cut}},
		{"near miss: certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", nil},
		{"near miss: public key", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", nil},
	})
}

func TestDetectKeyFormats(t *testing.T) {
	t.Parallel()
	gh := "ghp_" + strings.Repeat("aB3", 12)
	cases := []struct {
		det  string
		c    Class
		in   string
		want []string
	}{
		{"aws_access_key", ClassCloudKey, "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", []string{"AKIAIOSFODNN7EXAMPLE"}},
		{"aws_access_key", ClassCloudKey, "ASIAY34FZKBOKMUTVV7A,", []string{"ASIAY34FZKBOKMUTVV7A"}},
		{"aws_access_key", ClassCloudKey, "AKIAIOSFODNN7EXAMPLEX", nil}, // too long
		{"aws_access_key", ClassCloudKey, "XAKIAIOSFODNN7EXAMPLE", nil}, // not at a word start
		{"gcp_api_key", ClassCloudKey, "key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", []string{"AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe"}},
		{"gcp_api_key", ClassCloudKey, "AIzaShort", nil},
		{"azure_key", ClassCloudKey, "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + strings.Repeat("Ab9+", 22) + ";EndpointSuffix=core.windows.net", []string{strings.Repeat("Ab9+", 22)}},
		{"azure_key", ClassCloudKey, "https://acct.blob.core.windows.net/c?sv=2021-06-08&se=2030&sig=AbCdEf0123456789%2BxyzXYZ%3D", []string{"AbCdEf0123456789%2BxyzXYZ%3D"}},
		{"azure_key", ClassCloudKey, "https://example.com/?sig=AbCdEf0123456789xyzXYZ", nil}, // no sv=: not a SAS
		{"github_token", ClassAPIKey, "token " + gh, []string{gh}},
		{"github_token", ClassAPIKey, "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", []string{"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"}},
		{"github_token", ClassAPIKey, "ghp_short", nil},
		{"slack_token", ClassAPIKey, "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", []string{"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"}},
		{"slack_token", ClassAPIKey, "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", []string{"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"}},
		{"stripe_key", ClassAPIKey, "sk_live_4eC39HqLyjWDarjtT1zdp7dc", []string{"sk_live_4eC39HqLyjWDarjtT1zdp7dc"}},
		{"stripe_key", ClassAPIKey, "pk_live_4eC39HqLyjWDarjtT1zdp7dc", nil}, // publishable
		{"openai_key", ClassAPIKey, "OPENAI_API_KEY=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34", []string{"sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34"}},
		{"openai_key", ClassAPIKey, "sk-ant-api03-AbCdEf0123456789-xyz_XYZ0123", []string{"sk-ant-api03-AbCdEf0123456789-xyz_XYZ0123"}},
		{"openai_key", ClassAPIKey, "pip install scikit-learn sk-learn-is-not-a-key-at-all", nil},
		{"saas_token", ClassAPIKey, "glpat-xxxxXXXX1234yyyyZZZZ", []string{"glpat-xxxxXXXX1234yyyyZZZZ"}},
		{"saas_token", ClassAPIKey, "npm_" + strings.Repeat("a1B2", 9), []string{"npm_" + strings.Repeat("a1B2", 9)}},
		{"saas_token", ClassAPIKey, "SG." + strings.Repeat("a", 22) + "." + strings.Repeat("B", 43), []string{"SG." + strings.Repeat("a", 22) + "." + strings.Repeat("B", 43)}},
		{"saas_token", ClassAPIKey, "shpat_" + strings.Repeat("0a", 16), []string{"shpat_" + strings.Repeat("0a", 16)}},
		{"saas_token", ClassPrivateKey, "AGE-SECRET-KEY-1" + strings.Repeat("QZ", 29), []string{"AGE-SECRET-KEY-1" + strings.Repeat("QZ", 29)}},
	}
	for _, tc := range cases {
		t.Run(tc.det+"/"+tc.in[:min(len(tc.in), 24)], func(t *testing.T) {
			t.Parallel()
			if got := found(t, tc.in, tc.c, tc.det); !slices.Equal(got, tc.want) {
				t.Errorf("ScanString(%q) %s/%s = %q, want %q", tc.in, tc.c, tc.det, got, tc.want)
			}
		})
	}
}

func TestDetectBearer(t *testing.T) {
	t.Parallel()
	basic := base64.StdEncoding.EncodeToString([]byte("ada:s3cret"))
	runDetectorCases(t, ClassBearer, "bearer_credentials", []detectorCase{
		{"header", "Authorization: Bearer abc.DEF-123_456~xyz", []string{"abc.DEF-123_456~xyz"}},
		{"lower case", "curl -H 'authorization: bearer 0123456789abcdef'", []string{"0123456789abcdef"}},
		{"basic", "Authorization: Basic " + basic, []string{basic}},
		{"near miss: prose", "Bearer authentication is described in RFC 6750", nil},
		{"near miss: short", "Bearer abc123", nil},
		{"near miss: basic not credentials", "Basic " + base64.StdEncoding.EncodeToString([]byte("no colon here")), nil},
		{"near miss: basic prose", "Basic knowledge of networking", nil},
	})
}

func TestDetectURLPassword(t *testing.T) {
	t.Parallel()
	runDetectorCases(t, ClassPassword, "url_password", []detectorCase{
		{"postgres", "postgres://app:Sup3rS3cret@db.internal:5432/app", []string{"Sup3rS3cret"}},
		{"https", "see https://ada:pa%24%24word@example.com/x", []string{"pa%24%24word"}},
		{"near miss: user only", "ssh://git@github.com/owner/repo", nil},
		{"near miss: masked", "redis://user:****@cache:6379", nil},
		{"near miss: variable", "mysql://root:${DB_PASS}@db/x", nil},
		{"near miss: at in path", "https://example.com/a:b@c", nil},
	})
}

func TestDetectAssignment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		c    Class
		want []string
	}{
		{"env", "DB_PASSWORD=hunter22", ClassPassword, []string{"hunter22"}},
		{"json in text", `{"password": "correct horse battery"}`, ClassPassword, []string{"correct horse battery"}},
		{"yaml", "client_secret: 9f8e7d6c5b4a", ClassSecret, []string{"9f8e7d6c5b4a"}},
		{"query", "GET /cb?code=abc&access_token=ya-token-12345&state=x", ClassToken, []string{"ya-token-12345"}},
		{"connection string", "Server=db;User Id=app;Password=P@ssw0rd;", ClassPassword, []string{"P@ssw0rd"}},
		{"api key camel", "apiKey: 'k-12345678'", ClassAPIKey, []string{"k-12345678"}},
		{"cvv", "cvv: 123", ClassCVV, []string{"123"}},
		{"authorization scheme", "Authorization: Token 0123456789abcdef", ClassToken, []string{"0123456789abcdef"}},
		{"near miss: placeholder", "password=********", ClassPassword, nil},
		{"near miss: env reference", "password=${DB_PASSWORD}", ClassPassword, nil},
		{"near miss: null", `"password": null`, ClassPassword, nil},
		{"near miss: prose word", "password: must be long", ClassPassword, nil},
		{"near miss: tokens used", "tokens_used: 123456", ClassToken, nil},
		{"near miss: pagination cursor", "next_page_token=CgwI2rWx", ClassToken, nil},
		{"near miss: url scheme", "https://example.com/token", ClassToken, nil},
		{"near miss: expires", "token_expires_at: 2030-01-01T00:00:00Z", ClassToken, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := found(t, tc.in, tc.c, "key_assignment"); !slices.Equal(got, tc.want) {
				t.Errorf("ScanString(%q) %s = %q, want %q", tc.in, tc.c, got, tc.want)
			}
		})
	}
}

func TestDetectKeywordEntropy(t *testing.T) {
	t.Parallel()
	sha := "3f786850e387550fdab836ed7e6dc881de23001b"
	uuid := "123e4567-e89b-12d3-a456-426614174000"
	runDetectorCases(t, ClassSecret, "keyword_entropy", []detectorCase{
		{"after secret word", "the signing secret is Zx9Qw2Lk8Jm4Np7Rt5Vb", []string{"Zx9Qw2Lk8Jm4Np7Rt5Vb"}},
		{"hex after key word", "private key material " + sha, []string{sha}},
		{"uuid after token word", "your token is " + uuid, []string{uuid}},
		{"near miss: git sha alone", "commit " + sha + " merged", nil},
		{"near miss: uuid alone", "request " + uuid + " failed", nil},
		{"near miss: hex hash alone", "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", nil},
		{"near miss: word far away", "key" + strings.Repeat(" filler", 8) + " Zx9Qw2Lk8Jm4Np7Rt5Vb", nil},
		{"near miss: low entropy", "secret aaaaaaaaaaaaaaaa1111", nil},
		{"near miss: letters only", "secret AbCdEfGhIjKlMnOpQrSt", nil},
		{"slashes, not a path", "aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", []string{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}},
		{"rooted base64 with its padding", "client secret /9j4Kx2Lm8Qp/Wv3Zr7Tn5Yb==", []string{"/9j4Kx2Lm8Qp/Wv3Zr7Tn5Yb=="}},
	})
}

// TestFilesystemPathIsNotASecret: the reference filesystem server's
// refusals name the path asked for and the allowed directories. A test's
// or a Mac's directory looks random enough, and a key-like word is often
// near it — in the file asked for, or in the directory's own name — but a
// path is not a secret.
func TestFilesystemPathIsNotASecret(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{
		"Access denied - path outside allowed directories: /etc/passwd not in /tmp/TestContextEconomy3805623719/001",
		"Access denied - path outside allowed directories: /home/dana/.ssh/id_rsa_private not in /home/dana/notes2024, /srv/share/team-b/2024",
		"Access denied - symlink target outside allowed directories: /private/var/folders/7x/k3j2h4n5b6v7c8x9z0/T/secrets2024/a.txt not in /Users/dana/work2024/notes",
		"Error: ENOENT: no such file or directory, open '/tmp/TestUpstreamFilesystem2211/001/token_cache/data2024.json'",
		"Access denied - path outside allowed directories: ../auth/keys2024/prod not in ./data/run-2024-05/out/",
		"Access denied - path outside allowed directories: /home/dana/secrets not in /home/dana/.config/codecell2024/notes_v2",
	} {
		if ms := ScanString(msg); len(ms) != 0 {
			t.Errorf("ScanString(%q) = %+v, want nothing", msg, ms)
		}
	}
}

func TestScanResolvesOverlaps(t *testing.T) {
	t.Parallel()
	// The JWT detector is surer than the assignment one: one match, the JWT.
	jwt := jwtOf(`{"alg":"HS256"}`, `{"sub":"1"}`, "sig0123456789")
	ms := ScanString("token=" + jwt)
	if len(ms) != 1 || ms[0].Class != ClassJWT {
		t.Fatalf("ScanString = %+v, want one jwt match", ms)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].Start < ms[i-1].End {
			t.Fatalf("overlapping matches %+v", ms)
		}
	}
}

func TestDetectorsNamed(t *testing.T) {
	t.Parallel()
	if len(Detectors) < 15 {
		t.Fatalf("%d detectors, want at least 15", len(Detectors))
	}
	// Every detector name a match can carry is listed.
	names := map[string]bool{}
	for _, r := range prefixRules {
		names[r.detector] = true
	}
	for n := range names {
		if !slices.Contains(Detectors, n) {
			t.Errorf("detector %q not in Detectors", n)
		}
	}
}

// TestScanAdversarial runs the detectors over long strings built to make
// a careless scanner quadratic; with linear scanners it takes milliseconds.
func TestScanAdversarial(t *testing.T) {
	t.Parallel()
	const n = 100_000
	for name, s := range map[string]string{
		"at signs":       strings.Repeat("a", n) + strings.Repeat("@", n),
		"local chars":    strings.Repeat("a.b@", n/4),
		"assignments":    strings.Repeat("pwd:", n/4),
		"quoted":         strings.Repeat(`password="`, n/10),
		"bearer":         strings.Repeat("bearer-", n/7),
		"digits spaced":  strings.Repeat("1 ", n/2),
		"digits dashed":  strings.Repeat("0-", n/2),
		"dotted":         strings.Repeat("1.", n/2),
		"colons":         strings.Repeat("a:", n/2),
		"plus":           strings.Repeat("+1 ", n/3),
		"eyJ":            strings.Repeat("eyJ.", n/4),
		"pem":            strings.Repeat("-----BEGIN PRIVATE KEY-----", n/27),
		"urls":           strings.Repeat("a://b:c", n/7),
		"prefix runs":    strings.Repeat("sk-", n/3),
		"entropy runs":   "secret " + strings.Repeat("aB3dE5gH7j", n/10),
		"upper digits":   strings.Repeat("DE89", n/4),
		"hex and colons": strings.Repeat("fe80:", n/5),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ScanString(s)
		})
	}
}

// TestNoFalsePositives scans strings that are common in tool results and
// hold nothing sensitive: no detector may fire on any.
func TestNoFalsePositives(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"123e4567-e89b-12d3-a456-426614174000",
		"commit 3f786850e387550fdab836ed7e6dc881de23001b",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"2024-01-15T12:30:45.123Z", "2024-01-15 12:30:45+02:00", "15/01/2024", "Jan 15, 2024",
		"v1.2.3", "1.22.4", "go1.26.8", "version 10.0.19041.1", "release 2.3.4.5",
		"/usr/local/bin/codecell", "C:\\Program Files\\App\\app.exe",
		"https://example.com/path?page=2&sort=asc#top", "http://localhost:8080/health",
		"SKU-000123", "ORD-2024-000042", "INV/2024/0042", "1Z999AA10123456784",
		"#ff8800", "rgba(0,0,0,0.5)", "$1,234.56", "€ 99,90", "42%", "3.14159265358979",
		"37.7749,-122.4194", "-33.8688, 151.2093", "12:30", "1h23m45s", "200 OK",
		"tokens_used: 123456", "max_tokens=4096", "pinned: true", "author: Ada",
		"the spinner spins", "Basic knowledge of Go", "Bearer tokens are described in RFC 6750",
		"order 4111111111111112 shipped", "ticket 1234567890123456", "phone: unknown",
		"call me maybe", "id=550e8400-e29b-41d4-a716-446655440000", "127.0.0.1:6379",
		"0.0.0.0/0", "255.255.255.0", "::1", "fe80::", "std::vector<int>",
		"aGVsbG8gd29ybGQ=", "SGVsbG8sIFdvcmxkIQ==", "lorem ipsum dolor sit amet",
		"user@localhost", "noreply@", "@channel", "git@github.com:owner/repo.git",
		"npm install lodash@4.17.21", "docker.io/library/nginx:1.25",
		"MIT License", "Copyright (c) 2024", "ISBN 978-3-16-148410-0", "+1", "+44",
		"CVE-2024-12345", "RFC 6750", "HTTP/1.1 404 Not Found", "p95=123ms p99=456ms",
	} {
		if ms := ScanString(s); len(ms) > 0 {
			t.Errorf("ScanString(%q) = %+v, want nothing", s, ms)
		}
	}
}
