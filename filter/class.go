package filter

import "fmt"

// Class names a kind of sensitive data. It appears in tokens
// (⟦email:7f3a9c21⟧), in redaction markers and in reports.
type Class string

// Classes of personal data; their default action is ActionTokenize.
const (
	ClassEmail         Class = "email"
	ClassPhone         Class = "phone"
	ClassCard          Class = "card"
	ClassSSN           Class = "ssn"
	ClassNationalID    Class = "national_id" // passport, driver's licence, tax and national ids
	ClassIBAN          Class = "iban"
	ClassAccountNumber Class = "account_number" // bank account and routing numbers
	ClassIP            Class = "ip"
	ClassDateOfBirth   Class = "date_of_birth"
	ClassAddress       Class = "address" // postal addresses
)

// Classes of credentials; their default action is ActionRedact.
const (
	ClassPassword   Class = "password"
	ClassSecret     Class = "secret" // client secrets, credentials, high-entropy values next to key-like words
	ClassToken      Class = "token"  // access, refresh and session tokens, cookies, authorization headers
	ClassAPIKey     Class = "api_key"
	ClassCloudKey   Class = "cloud_key" // AWS, GCP and Azure keys
	ClassPrivateKey Class = "private_key"
	ClassJWT        Class = "jwt"
	ClassBearer     Class = "bearer" // credentials after Bearer or Basic in text
	ClassCVV        Class = "cvv"
	ClassPIN        Class = "pin"
)

// Classes lists every class the detectors report, personal data first.
var Classes = []Class{
	ClassEmail, ClassPhone, ClassCard, ClassSSN, ClassNationalID, ClassIBAN,
	ClassAccountNumber, ClassIP, ClassDateOfBirth, ClassAddress,
	ClassPassword, ClassSecret, ClassToken, ClassAPIKey, ClassCloudKey,
	ClassPrivateKey, ClassJWT, ClassBearer, ClassCVV, ClassPIN,
}

// Action is what the filter does with a value of a class.
type Action string

// Actions.
const (
	// ActionTokenize replaces the value by a token such as ⟦email:7f3a9c21⟧
	// and keeps token → value in the session's Vault, so a later tool call
	// can use the value without the model seeing it.
	ActionTokenize Action = "tokenize"
	// ActionRedact replaces the value by a marker such as
	// ⟦password:redacted⟧ that cannot be resolved.
	ActionRedact Action = "redact"
	// ActionMask keeps the last 4 letters and digits of a value that has at
	// least 12 of them and replaces every other letter and digit with '*'
	// (separators stay); shorter values are masked entirely.
	ActionMask Action = "mask"
	// ActionAllow leaves the value as it is.
	ActionAllow Action = "allow"
)

func (a Action) valid() bool {
	switch a {
	case ActionTokenize, ActionRedact, ActionMask, ActionAllow:
		return true
	}
	return false
}

// personal reports whether c is personal data rather than a credential.
func (c Class) personal() bool {
	switch c {
	case ClassEmail, ClassPhone, ClassCard, ClassSSN, ClassNationalID, ClassIBAN,
		ClassAccountNumber, ClassIP, ClassDateOfBirth, ClassAddress:
		return true
	}
	return false
}

// DefaultAction returns the action for c when the policy does not name
// one: ActionTokenize for personal data, ActionRedact for credentials and
// for classes the filter does not know.
func DefaultAction(c Class) Action {
	if c.personal() {
		return ActionTokenize
	}
	return ActionRedact
}

func (c Class) known() bool {
	for _, k := range Classes {
		if k == c {
			return true
		}
	}
	return false
}

func validClassName(c Class) error {
	if !c.known() {
		return fmt.Errorf("unknown class %q", c)
	}
	return nil
}
