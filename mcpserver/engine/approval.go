package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/text/unicode/norm"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// ApprovalPolicy says which tool calls codecell asks the client's user
// to approve (MCP elicitation) before making them.
type ApprovalPolicy struct {
	// RequiredFor lists what needs approval: "destructive" (tools
	// annotated destructive, and every tool whose annotations codecell
	// does not trust), "write" (tools not known to be read-only), or
	// a glob on qualified tool names ("gh.*_delete*", "crm.*"). A nil
	// list in a principal's policy keeps the server's.
	RequiredFor []string
	// OnUnsupported is what happens when the client cannot be asked (no
	// elicitation capability, or a request of the stateless protocol):
	// "refuse" (the default: fail closed) or "allow".
	OnUnsupported string
}

// ApprovalConfig is the server's approval policy and each principal's
// overrides.
type ApprovalConfig struct {
	ApprovalPolicy
	// Principals override the policy per principal: a field left empty
	// keeps the server's.
	Principals map[string]ApprovalPolicy
}

// The error codes of approvals.
const (
	// CodeApprovalDeclined: the user declined or cancelled a call the
	// policy asked them to approve.
	CodeApprovalDeclined = "approval_declined"
	// CodeApprovalUnavailable: a call needs approval and the client cannot
	// be asked (on_unsupported = "refuse").
	CodeApprovalUnavailable = "approval_unavailable"
)

// approvalPolicy is an ApprovalConfig checked and resolved per principal.
type approvalPolicy struct {
	base       ApprovalPolicy
	principals map[string]ApprovalPolicy
}

func newApprovalPolicy(c ApprovalConfig) (*approvalPolicy, error) {
	p := &approvalPolicy{base: c.ApprovalPolicy, principals: map[string]ApprovalPolicy{}}
	if p.base.OnUnsupported == "" {
		p.base.OnUnsupported = "refuse"
	}
	check := func(where string, ap ApprovalPolicy) error {
		var errs []error
		switch ap.OnUnsupported {
		case "", "refuse", "allow":
		default:
			errs = append(errs, fmt.Errorf("approval%s.on_unsupported %q: want refuse or allow", where, ap.OnUnsupported))
		}
		for _, g := range ap.RequiredFor {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				errs = append(errs, fmt.Errorf("approval%s.required_for %q: not a glob", where, g))
			}
		}
		return errors.Join(errs...)
	}
	errs := []error{check("", p.base)}
	for name, ap := range c.Principals {
		errs = append(errs, check(".principal."+name, ap))
		if ap.RequiredFor == nil {
			ap.RequiredFor = p.base.RequiredFor
		}
		if ap.OnUnsupported == "" {
			ap.OnUnsupported = p.base.OnUnsupported
		}
		p.principals[name] = ap
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("approval policy: %w", err)
	}
	return p, nil
}

func (p *approvalPolicy) of(principal string) ApprovalPolicy {
	if ap, ok := p.principals[principal]; ok {
		return ap
	}
	return p.base
}

// requires returns the entry of ap that makes a call of t need approval,
// or "". The runtime's own tools never need it.
func (ap ApprovalPolicy) requires(t *tools.Tool) string {
	if t.Runtime {
		return ""
	}
	for _, r := range ap.RequiredFor {
		switch r {
		case "destructive":
			if t.Annotations.MayDestroy() {
				return r
			}
		case "write":
			if !t.Annotations.KnownReadOnly() {
				return r
			}
		default:
			if t.Matches(r) {
				return r
			}
		}
	}
	return ""
}

// Approval prompts begin with a line that says who wrote them: codecell's
// own, for a call its policy names, or the program's, whose text follows
// and cannot pass for codecell's (it never starts a prompt).
const (
	policyPromptHead  = "codecell — approval required by the server's policy"
	programPromptHead = "A program run by codecell asks (its own words, not codecell's):"
)

// approvals asks the client's user to approve the calls its policy
// names before they are made, as a stage of the gate, and answers
// approval.request, a program's own question to the user.
type approvals struct {
	asker
	policy *approvalPolicy
	// credentials redacts credentials only: in the answers to a
	// program's approval.request.
	credentials *filter.Filter
	reg         *tools.Registry
	log         *slog.Logger
}

func newApprovals(cfg ApprovalConfig, a asker, reg *tools.Registry, log *slog.Logger) (*approvals, error) {
	policy, err := newApprovalPolicy(cfg)
	if err != nil {
		return nil, err
	}
	credentials, err := credentialsFilter()
	if err != nil {
		return nil, err
	}
	return &approvals{asker: a, policy: policy, credentials: credentials, reg: reg, log: log}, nil
}

// pass is the gate's approval stage; a helper's own call is not approved
// (its calls are, each on its own).
func (a *approvals) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	if !c.gated() {
		if err := a.approve(withAsking(ctx, c), c); err != nil {
			return nil, err
		}
	}
	return next.call(ctx, c)
}

// approve asks the client's user to approve a call the policy names,
// and refuses it unless they accept. The user sees the call's arguments
// as the program wrote them, tokens unresolved, as the output filter
// shows them, as the model would.
func (a *approvals) approve(ctx context.Context, c *Call) error {
	caller := c.Run.Caller
	ap := a.policy.of(caller.Principal)
	if len(ap.RequiredFor) == 0 {
		return nil
	}
	t := c.Tool
	if t == nil {
		return nil // the registry reports the unknown tool
	}
	why := ap.requires(t)
	if why == "" {
		return nil
	}
	refuse := func(code, format string, args ...any) error {
		a.log.Info("approval", "tool", t.Name, "principal", caller.Principal, "outcome", code)
		return &tools.Error{Code: code, Tool: t.Name, Message: fmt.Sprintf(format, args...)}
	}
	// A call that would fail validation costs the user no prompt.
	if err := a.results.validateHeld(ctx, a.reg.View(caller), c); err != nil {
		return err
	}
	if err := a.client.Can(ctx, t.Name, Elicitation); err != nil {
		if errors.Is(err, ErrNotAskableHere) {
			// The client can be asked, but not from here: on_unsupported
			// is for clients that cannot be asked at all.
			return refuse(CodeApprovalUnavailable, "this call needs the user's approval (approval.required_for %q), and codecell cannot ask the client from here: %s", why, strings.TrimPrefix(err.Error(), t.Name+": "))
		}
		if ap.OnUnsupported == "allow" {
			a.log.Warn("a call that needs approval made without it: the client cannot be asked", "tool", t.Name, "principal", caller.Principal)
			return nil
		}
		return refuse(CodeApprovalUnavailable, "this call needs the user's approval (approval.required_for %q) and the client cannot be asked: %s", why, strings.TrimPrefix(err.Error(), t.Name+": "))
	}
	flow := c.Run.settled()
	// The arguments are filtered whole, as a result is: what that costs
	// is held first, of the run's and its principal's results in flight
	// (filterhold.go; attack18 K1).
	fh, err := a.results.holdFiltering(ctx, c, "the arguments the approval shows", int64(len(c.Written)), tools.JSONValues(c.Written, math.MaxInt))
	if err != nil {
		return err
	}
	opts := filter.Options{Vault: c.Run.vault, Flow: flow, Budget: shownArgsBudget, Findings: fh.findings}
	shown := "(not shown: not JSON)"
	f, err := a.filter.Apply(filter.Input{Result: c.Written}, opts)
	var held *filter.FindingsError
	switch {
	case errors.As(err, &held):
		fh.release()
		return heldError(t.Name, err)
	case err == nil:
		shown, err = shownArguments(f.Full, f.Limited)
	}
	fh.release() // what is shown is at most maxShownArgs bytes
	if err != nil && held == nil && f != nil {
		return refuse(CodeApprovalUnavailable, "this call needs the user's approval (approval.required_for %q), and its arguments cannot be shown to the user: %v", why, err)
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s (approval.required_for %q).\nA program wants to call %s", policyPromptHead, why, t.Name)
	if t.Annotations.MayDestroy() {
		msg.WriteString(" (it may change or destroy data)")
	}
	fmt.Fprintf(&msg, ".\nArguments, as the model sees them: %s\n", shown)
	if purpose := c.Run.purpose; purpose != "" {
		fmt.Fprintf(&msg, "Purpose of the run, as the model gave it: %s\n", shownPurpose(filterText(a.filter, purpose, 512, filter.Options{Vault: c.Run.vault, Flow: flow})))
	}
	msg.WriteString("Accept to allow this one call; decline to refuse it.")
	var res *mcp.ElicitationResult
	asked := time.Now()
	err = waitOnClient(ctx, c, func(ctx context.Context) (err error) {
		res, err = a.client.Elicit(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message:         msg.String(),
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		}})
		return err
	})
	if err != nil {
		err = clientError(ctx, t.Name, "elicitation", err)
		if tools.CodeOf(err) == CodeCapabilityMissing {
			return refuse(CodeApprovalUnavailable, "this call needs the user's approval and the client could not be asked: %v", err)
		}
		return err
	}
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		a.log.Info("approval", "tool", t.Name, "principal", caller.Principal, "outcome", "accepted")
		if log := c.Run.log; log != nil {
			log.noteApproved(c.metricLabel(a.reg), asked)
		}
		return nil
	case mcp.ElicitationResponseActionCancel:
		return refuse(CodeApprovalDeclined, "the user cancelled the approval of this call (approval.required_for %q); it was not made", why)
	}
	return refuse(CodeApprovalDeclined, "the user declined this call (approval.required_for %q); it was not made", why)
}

// The bounds of the arguments an approval prompt shows: the budget their
// values share, and the most the prompt shows when every top-level
// argument is listed, however cut.
const (
	shownArgsBudget = 1024
	maxShownArgs    = 4096
)

// shownArguments returns the arguments as the approval prompt shows them,
// given their filtered form whole and cut to shownArgsBudget: the cut
// form when it keeps every top-level member whole-named, else every
// top-level member's key with its value cut to an equal share of the
// budget (elided when the share is too small to show anything). A user
// never approves a call one of whose arguments they were not shown; when
// even the keys do not fit maxShownArgs, the prompt is not sent.
func shownArguments(full, limited json.RawMessage) (string, error) {
	fullKeys, fullVals, ok := topMembers(full)
	if !ok {
		return string(limited), nil // not an object: no member to hide
	}
	if keys, _, _ := topMembers(limited); slices.Equal(keys, fullKeys) {
		return string(limited), nil
	}
	share := shownArgsBudget / max(len(fullKeys), 1)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range fullKeys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		v := json.RawMessage(`"…"`)
		if share >= filter.MinBudget {
			if cut, _, err := filter.Limit(fullVals[i], filter.LimitOptions{Budget: share}); err == nil {
				v = cut
			}
		}
		b.Write(v)
		if b.Len() > maxShownArgs {
			return "", fmt.Errorf("%d top-level arguments whose names take more than %d bytes; pass fewer top-level arguments, or shorter names", len(fullKeys), maxShownArgs)
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

// topMembers returns the keys and values of a JSON object's top-level
// members in order, and false when doc is not an object.
func topMembers(doc json.RawMessage) ([]string, []json.RawMessage, bool) {
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	var (
		keys []string
		vals []json.RawMessage
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	return keys, vals, true
}

const approvalRequestInput = `{
	"type": "object",
	"properties": {
		"message": {"type": "string", "minLength": 1, "description": "What the user is asked, in their words."},
		"schema": {"type": "object", "description": "A flat JSON Schema object of primitive properties the user fills in; none asks for a plain accept or decline."},
		"options": {"type": "object", "properties": {"schema": {"type": "object"}}, "additionalProperties": false, "description": "The second positional argument: {schema}."}
	},
	"required": ["message"],
	"additionalProperties": false
}`

// approvalHelpers are the approval runtime namespace.
func (a *approvals) helpers() []helper {
	return []helper{{tool: tools.Tool{
		Name:         "approval.request",
		Summary:      "Ask the client's user to decide (MCP elicitation): (message, {schema?}) → {action: accept|decline|cancel, content}.",
		Description:  "Request shows the message to the user of the MCP client that runs this program, with a form when a schema is given, and waits for their answer. Branch on action: only \"accept\" carries content. The wait counts against the run's deadline: give execute_code a timeout_ms long enough for a person.",
		InputSchema:  json.RawMessage(approvalRequestInput),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"action":{"type":"string","enum":["accept","decline","cancel"]},"content":{"type":"object"}},"required":["action"]}`),
		Annotations:  tools.Annotations{ReadOnly: true, OpenWorld: true},
		Examples: []tools.Example{{
			Args:   json.RawMessage(`{"message":"Close the 12 stale issues?","schema":{"type":"object","properties":{"comment":{"type":"string"}}}}`),
			Result: json.RawMessage(`{"action":"accept","content":{"comment":"Closed as stale."}}`),
		}},
		Errors: []tools.ErrorDoc{
			{Code: CodeCapabilityMissing, Description: "The client did not declare elicitation, or the request has no session to ask (protocol 2026-07-28); the message says what to enable."},
			{Code: tools.CodeToolFailed, Description: "The client failed the request."},
		},
		Notes:      "Tool calls the server's policy (approval.required_for) names are approved by codecell itself before they are made; a declined one fails with approval_declined, and with approval_unavailable when the client cannot be asked.",
		Positional: []string{"message", "options"},
		Runtime:    true,
	}, call: a.request}}
}

type approvalRequestArgs struct {
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema"`
}

type approvalResult struct {
	Action  string `json:"action"`
	Content any    `json:"content,omitempty"`
}

// approvalRequest takes approval.request(message, {schema}): the
// positional options object's fields are the arguments' own. The user
// sees the message marked as the program's, as the output filter shows
// any output; a form may not ask for credentials, and a credential the
// user typed anyway is redacted before the program gets the answer.
func (a *approvals) request(ctx context.Context, c *Call, raw json.RawMessage) (json.RawMessage, error) {
	var in struct {
		approvalRequestArgs
		Options *approvalRequestArgs `json:"options"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, tools.DecodeError(err)
	}
	if in.Options != nil && in.Schema == nil {
		in.Schema = in.Options.Schema
	}
	schema, err := a.form(c, in.Schema)
	if err != nil {
		return nil, err
	}
	if err := credentialFields(schema); err != nil {
		return nil, err
	}
	if err := a.client.Can(ctx, "approval.request", Elicitation); err != nil {
		return nil, err
	}
	msg := programPromptHead + "\n\n" + printable(filterText(a.filter, in.Message, maxProgramPrompt, clientFilter(c)))
	var res *mcp.ElicitationResult
	err = waitOnClient(ctx, c, func(ctx context.Context) (err error) {
		res, err = a.client.Elicit(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: msg, RequestedSchema: schema}})
		return err
	})
	if err != nil {
		return nil, clientError(ctx, "approval.request", "elicitation", err)
	}
	out := approvalResult{Action: string(res.Action)}
	if res.Action == mcp.ElicitationResponseActionAccept {
		out.Content = a.withoutCredentials(res.Content)
	}
	return json.Marshal(out)
}

// maxProgramPrompt bounds the message of a program's approval.request.
const maxProgramPrompt = 2048

// printable drops the control characters of a program's message but line
// breaks and tabs: nothing a terminal would act on, nothing that rewrites
// what came before.
// shownPurpose is the purpose the model gave a run as codecell's approval
// prompt shows it: on one line, quoted, with no control or format
// character — so that it cannot add lines that read as the prompt's own
// (a forged "Arguments, as the model sees them: …" after blank lines) —
// and not at all when it holds the prompt's own words. The words are
// looked for in what would be shown, in its compatibility form (NFKC),
// so that a zero-width or full-width character cannot hide them.
func shownPurpose(purpose string) string {
	one := strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Cf, r):
			return -1
		case unicode.IsControl(r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
			return ' '
		}
		return r
	}, purpose)), " ")
	if imitatesPrompt(one) {
		return "(not shown: it imitates this prompt's own words)"
	}
	return strconv.Quote(one)
}

// imitatesPrompt reports whether text holds the words of codecell's own
// approval prompts, looked for in its compatibility form (NFKC), case
// and spacing folded, with no format character, so that a zero-width
// or full-width character cannot hide them.
func imitatesPrompt(text string) bool {
	text = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, text)
	folded := strings.ToLower(strings.Join(strings.Fields(norm.NFKC.String(text)), " "))
	for _, own := range []string{policyPromptHead, programPromptHead, "Arguments, as the model sees them", "Accept to allow", "decline to refuse"} {
		if strings.Contains(folded, strings.ToLower(own)) {
			return true
		}
	}
	return false
}

func printable(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, text)
}

// Bounds of a program's form (approval.request's schema).
const (
	maxFormFields = 32
	maxFormTitle  = 200  // bytes of a title, a field name, an enum value
	maxFormText   = 1000 // bytes of a description
	maxFormEnum   = 64   // values of an enum
)

// form rebuilds a program's form (approval.request's schema) as the
// user may be shown it, or refuses it. MCP forms are flat: an object
// whose properties are strings, numbers, booleans, enums or arrays of
// enum values. Only the keywords of those are kept, each of its type:
// a form that has anything else cannot be checked, and is refused
// rather than passed on. Every text in it — titles, descriptions, enum
// values and their titles, defaults — is filtered as the message is
// (tokens stay tokens, what the run read is hidden) and bounded; a
// field's name, which comes back as the answer's key, is refused when
// the filter would change it.
func (a *approvals) form(c *Call, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	refuse := func(format string, args ...any) error {
		return &tools.Error{Code: tools.CodeInvalidArguments, Tool: "approval.request",
			Message: "the form cannot be checked: " + fmt.Sprintf(format, args...) +
				`; send a flat form: {type: "object", properties: {name: {type: "string"|"number"|"integer"|"boolean", title?, description?, enum?, default?, …}}, required?: [names]}`}
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, refuse("not a JSON object")
	}
	text := func(where string, v any, limit int) (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", refuse("%s: not a string", where)
		}
		out := printable(filterText(a.filter, s, 0, clientFilter(c)))
		if len(out) > limit {
			return "", refuse("%s: %d bytes, at most %d", where, len(out), limit)
		}
		if imitatesPrompt(out) {
			// A host shows titles and descriptions as the form's
			// labels and help, under the program's marked message:
			// codecell's own words there would read as its prompt
			// (issue 19, attack27 L3).
			return "", refuse("%s: it holds the words of codecell's own approval prompt, which a program's form may not imitate", where)
		}
		return out, nil
	}
	texts := func(where string, v any, limit int) ([]any, error) {
		list, ok := v.([]any)
		if !ok || len(list) > maxFormEnum {
			return nil, refuse("%s: not a list of at most %d strings", where, maxFormEnum)
		}
		out := make([]any, len(list))
		for i, e := range list {
			t, err := text(fmt.Sprintf("%s[%d]", where, i), e, limit)
			if err != nil {
				return nil, err
			}
			out[i] = t
		}
		return out, nil
	}
	number := func(where string, v any) (any, error) {
		if _, ok := v.(json.Number); !ok {
			return nil, refuse("%s: not a number", where)
		}
		return v, nil
	}
	// titledOptions is oneOf/anyOf [{const, title}] (titled enums).
	titledOptions := func(where string, v any) (any, error) {
		list, ok := v.([]any)
		if !ok || len(list) > maxFormEnum {
			return nil, refuse("%s: not a list of at most %d options", where, maxFormEnum)
		}
		out := make([]any, len(list))
		for i, e := range list {
			o, ok := e.(map[string]any)
			if !ok {
				return nil, refuse("%s[%d]: not an object", where, i)
			}
			opt := map[string]any{}
			for k, v := range o {
				if k != "const" && k != "title" {
					return nil, refuse("%s[%d]: keyword %q", where, i, k)
				}
				t, err := text(fmt.Sprintf("%s[%d].%s", where, i, k), v, maxFormTitle)
				if err != nil {
					return nil, err
				}
				opt[k] = t
			}
			out[i] = opt
		}
		return out, nil
	}
	var field func(where string, v any, inArray bool) (map[string]any, error)
	field = func(where string, v any, inArray bool) (map[string]any, error) {
		p, ok := v.(map[string]any)
		if !ok {
			return nil, refuse("%s: not an object", where)
		}
		out := map[string]any{}
		for k, v := range p {
			at := where + "." + k
			var err error
			switch k {
			case "type":
				t, _ := v.(string)
				switch t {
				case "string", "number", "integer", "boolean":
				case "array":
					if inArray {
						return nil, refuse("%s: an array of arrays", at)
					}
				default:
					return nil, refuse("%s: %v is not string, number, integer, boolean or array", at, v)
				}
				out[k] = t
			case "title", "format":
				out[k], err = text(at, v, maxFormTitle)
			case "description":
				out[k], err = text(at, v, maxFormText)
			case "enum", "enumNames":
				out[k], err = texts(at, v, maxFormTitle)
			case "oneOf", "anyOf":
				out[k], err = titledOptions(at, v)
			case "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems":
				out[k], err = number(at, v)
			case "items":
				if inArray {
					return nil, refuse("%s: items of items", at)
				}
				out[k], err = field(at, v, true)
			case "default":
				switch d := v.(type) {
				case bool, json.Number:
					out[k] = d
				case string:
					out[k], err = text(at, d, maxFormTitle)
				default:
					out[k], err = texts(at, d, maxFormTitle)
				}
			default:
				return nil, refuse("%s: keyword %q", where, k)
			}
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	form := map[string]any{"type": "object"}
	for k, v := range top {
		switch k {
		case "type":
			if v != "object" {
				return nil, refuse("type %v: a form is an object", v)
			}
		case "title":
			t, err := text("title", v, maxFormTitle)
			if err != nil {
				return nil, err
			}
			form[k] = t
		case "description":
			t, err := text("description", v, maxFormText)
			if err != nil {
				return nil, err
			}
			form[k] = t
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, refuse("properties: not an object")
			}
			if len(props) > maxFormFields {
				return nil, refuse("%d fields, at most %d", len(props), maxFormFields)
			}
			out := map[string]any{}
			for name, p := range props {
				if shown, err := text("a field's name", name, maxFormTitle); err != nil || shown != name {
					return nil, refuse("field %q: a name must be short, printable and not data the output filter hides (name it for what it asks)", printable(filterText(a.filter, name, maxFormTitle, clientFilter(c))))
				}
				f, err := field("properties."+name, p, false)
				if err != nil {
					return nil, err
				}
				out[name] = f
			}
			form[k] = out
		case "required":
			names, ok := v.([]any)
			if !ok {
				return nil, refuse("required: not a list of field names")
			}
			for _, n := range names {
				if _, ok := n.(string); !ok {
					return nil, refuse("required: not a list of field names")
				}
			}
			form[k] = names
		case "$schema":
		default:
			return nil, refuse("keyword %q", k)
		}
	}
	if _, ok := form["properties"]; !ok {
		form["properties"] = map[string]any{}
	}
	return json.Marshal(form)
}

// credentialFields refuses a form that asks for a credential: a field
// whose name, title or description the output filter takes for one
// (password, api_key, token, secret, …; "Your account password" as much
// as a field named password). MCP forbids asking for sensitive information through
// elicitation, and what the user types goes to the program. schema is a
// form as form rebuilt it; one that cannot be read is refused.
func credentialFields(schema json.RawMessage) error {
	var sch struct {
		Properties map[string]struct {
			Title       string `json:"title"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &sch); err != nil {
		return &tools.Error{Code: tools.CodeInvalidArguments, Tool: "approval.request",
			Message: "the form cannot be checked for credentials; send a flat form whose titles and descriptions are strings"}
	}
	var bad []string
	for name, p := range sch.Properties {
		for _, n := range []string{name, p.Title, p.Description} {
			if m, ok := filter.MatchField(n); ok && filter.DefaultAction(m.Class) == filter.ActionRedact {
				bad = append(bad, fmt.Sprintf("field %q asks for a %s", name, m.Class))
				break
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return &tools.Error{Code: tools.CodeInvalidArguments, Tool: "approval.request",
		Message: fmt.Sprintf("the form asks for credentials: %s; approval.request may not ask the user for passwords, keys or tokens (MCP forbids requesting sensitive information through elicitation). Configure the credential on the server (an OpenAPI source's auth, an upstream's env) instead", strings.Join(bad, ", "))}
}

// withoutCredentials returns an approval's answer with every value the
// output filter takes for a credential redacted; personal data the user
// typed (an address, a name) stays as typed.
func (a *approvals) withoutCredentials(content any) any {
	if content == nil {
		return nil
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil
	}
	f, err := a.credentials.Apply(filter.Input{Result: b}, filter.Options{})
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(f.Full, &out) != nil {
		return nil
	}
	return out
}
