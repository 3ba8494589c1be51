package filter

import (
	"slices"
	"testing"
)

func TestSplitWords(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"apiKey":             {"api", "key"},
		"API-KEY":            {"api", "key"},
		"api_key":            {"api", "key"},
		"APIKey":             {"api", "key"},
		"x-api-key2":         {"x", "api", "key", "2"},
		"HTTP_AUTHORIZATION": {"http", "authorization"},
		"driver's licence":   {"driver", "s", "licence"},
		"Set-Cookie":         {"set", "cookie"},
		"cvv2":               {"cvv", "2"},
		"ÜberPasswort":       {"über", "passwort"},
		"":                   nil,
	}
	for in, want := range cases {
		if got := splitWords(in); !slices.Equal(got, want) {
			t.Errorf("splitWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatchField(t *testing.T) {
	t.Parallel()
	positives := map[string]Class{
		"password": ClassPassword, "Passwd": ClassPassword, "pwd": ClassPassword,
		"user_password": ClassPassword, "passwordHash": ClassPassword, "password2": ClassPassword,
		"new-password": ClassPassword, "passphrase": ClassPassword,
		"secret": ClassSecret, "client_secret": ClassSecret, "clientSecret": ClassSecret,
		"credentials": ClassSecret, "otp": ClassSecret,
		"token": ClassToken, "access_token": ClassToken, "refreshToken": ClassToken,
		"id_token": ClassToken, "authorization": ClassToken, "Authorization": ClassToken,
		"cookie": ClassToken, "Set-Cookie": ClassToken, "session_id": ClassToken,
		"sessionId": ClassToken, "JSESSIONID": ClassToken, "csrf_token": ClassToken,
		"api_key": ClassAPIKey, "apiKey": ClassAPIKey, "API-KEY": ClassAPIKey,
		"apikey": ClassAPIKey, "X-Api-Key": ClassAPIKey, "api_token": ClassAPIKey,
		"access_key": ClassCloudKey, "aws_secret_access_key": ClassCloudKey,
		"AccountKey":  ClassCloudKey,
		"private_key": ClassPrivateKey, "privateKey": ClassPrivateKey, "private_key_pem": ClassPrivateKey,
		"ssn": ClassSSN, "SSN": ClassSSN, "social_security_number": ClassSSN,
		"national_id": ClassNationalID, "passport": ClassNationalID, "passport_number": ClassNationalID,
		"driver's licence": ClassNationalID, "drivers_license_number": ClassNationalID,
		"tax_id":      ClassNationalID,
		"card_number": ClassCard, "cardNumber": ClassCard, "credit_card": ClassCard, "cc_number": ClassCard,
		"cvv": ClassCVV, "CVC": ClassCVV, "cvv2": ClassCVV, "security_code": ClassCVV,
		"pin": ClassPIN, "PIN": ClassPIN, "pin_code": ClassPIN,
		"iban": ClassIBAN, "IBAN": ClassIBAN,
		"account_number": ClassAccountNumber, "routingNumber": ClassAccountNumber, "sort_code": ClassAccountNumber,
		"date_of_birth": ClassDateOfBirth, "dob": ClassDateOfBirth, "birthDate": ClassDateOfBirth,
		"email": ClassEmail, "e-mail": ClassEmail, "emailAddress": ClassEmail,
		"phone": ClassPhone, "phone_number": ClassPhone, "mobileNumber": ClassPhone,
		"ip": ClassIP, "ip_address": ClassIP, "ipAddress": ClassIP, "client_ip": ClassIP,
		"address": ClassAddress, "billing_address": ClassAddress, "street": ClassAddress,
	}
	if len(positives) < 30 {
		t.Fatalf("only %d positive cases", len(positives))
	}
	for name, want := range positives {
		got, ok := MatchField(name)
		if !ok || got.Class != want {
			t.Errorf("MatchField(%q) = %v, %v; want %s", name, got, ok, want)
		}
		if ok && (got.Confidence <= 0 || got.Confidence > 1) {
			t.Errorf("MatchField(%q) confidence %v out of (0,1]", name, got.Confidence)
		}
	}
	negatives := []string{
		"tokens_used", "max_tokens", "prompt_tokens", "tokenizer", "pinned", "spinner",
		"pinyin", "author", "authors", "oauth_provider", "auth_method", "bypass",
		"passing", "compass", "next_page_token", "nextPageToken", "page_token",
		"token_expires_at", "token_type", "password_updated_at", "password_policy",
		"min_password_length", "api_key_id", "api_key_name", "secretary", "mac_address",
		"server_address", "listen_address", "ip_version", "zip", "email_verified",
		"card_id", "card", "key", "primary_key", "public_key", "sort_key", "id",
		"username", "name", "description", "has_password", "skip", "ship_date",
		"session", "sessions_count", "cookie_policy", "publishable_secret",
	}
	for _, name := range negatives {
		if got, ok := MatchField(name); ok {
			t.Errorf("MatchField(%q) = %v, want no match", name, got)
		}
	}
}

func TestFieldPatternsCount(t *testing.T) {
	t.Parallel()
	if len(fieldPatterns) < 30 {
		t.Fatalf("%d field patterns, want at least 30", len(fieldPatterns))
	}
	for phrase, p := range fieldPatterns {
		if err := validClassName(p.class); err != nil {
			t.Errorf("pattern %q: %v", phrase, err)
		}
	}
}
