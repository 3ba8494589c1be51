package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Skills are programs saved for reuse. They belong to the server's shared
// catalogue: every caller sees them under /skills/ and calls them as
// skills.<name>(args); the store keeps them in one shared scope. A skill
// runs in a fresh VM under the sandbox's limits, as its caller.

// skillScope is the store principal that holds the shared skills.
const skillScope = "skills"

// maxSkillDepth bounds skills calling skills.
const maxSkillDepth = 4

// reservedSkills are names of the skills category's own tools.
var reservedSkills = map[string]bool{"save": true, "list": true, "delete": true}

func skillCtx(ctx context.Context) context.Context {
	return tools.WithCaller(ctx, tools.Caller{Principal: skillScope})
}

type skillDepthKey struct{}

func skillDepth(ctx context.Context) int {
	d, _ := ctx.Value(skillDepthKey{}).(int)
	return d
}

// initSkills registers the skills tools and every saved skill, and keeps
// the registry in step with the store.
func (s *Server) initSkills(ctx context.Context) error {
	st := s.cfg.Store
	if err := s.reg.DescribeCategory("skills", "Programs saved for reuse: save one with skills.save, call it as skills.<name>(args)."); err != nil {
		return err
	}
	if err := s.reg.Register(s.skillAdminTools()...); err != nil {
		return err
	}
	all, err := st.ListSkills(skillCtx(ctx))
	if err != nil {
		return fmt.Errorf("load skills: %w", err)
	}
	var ts []tools.Tool
	for _, sk := range all {
		ts = append(ts, s.skillTool(sk))
	}
	if err := s.reg.Register(ts...); err != nil {
		return fmt.Errorf("register skills: %w", err)
	}
	s.unsubscribeSkills = st.OnSkillChange(func(ch memory.SkillChange) {
		if ch.Principal != skillScope {
			return
		}
		name := "skills." + ch.Name
		if ch.Deleted {
			s.reg.Unregister(name)
			return
		}
		sk, err := st.GetSkill(skillCtx(context.Background()), ch.Name)
		if err != nil {
			s.log.Error("reload skill", "skill", ch.Name, "err", err)
			return
		}
		if err := s.reg.Register(s.skillTool(sk)); err != nil {
			s.log.Error("register skill", "skill", ch.Name, "err", err)
		}
	})
	return nil
}

// skillTool describes a saved skill as a catalogue tool.
func (s *Server) skillTool(sk memory.Skill) tools.Tool {
	schema := sk.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	summary, _, _ := strings.Cut(strings.TrimSpace(sk.Description), "\n")
	if summary == "" {
		summary = "Saved skill " + sk.Name + "."
	}
	name := sk.Name
	return tools.Tool{
		Name:        "skills." + name,
		Summary:     summary,
		Description: sk.Description,
		InputSchema: schema,
		Notes:       fmt.Sprintf("A saved %s program (version %d); it runs in a fresh sandbox with its arguments as the global args. Save a new version with skills.save.", sk.Language, sk.Version),
		Source:      sk.Code,
		Errors:      []tools.ErrorDoc{{Code: "skill_failed", Description: "The skill's program failed; the message says how, with its line."}},
		Handler: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			return s.runSkill(ctx, name, args)
		},
	}
}

// runSkill runs a saved skill as its caller, nested in the caller's run.
func (s *Server) runSkill(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	depth := skillDepth(ctx)
	if depth >= maxSkillDepth {
		return nil, tools.Errorf("skill_failed", "skills call each other more than %d levels deep; look for a skill that calls itself", maxSkillDepth)
	}
	sk, err := s.cfg.Store.GetSkill(skillCtx(ctx), name)
	if err != nil {
		return nil, err
	}
	caller := tools.CallerFrom(ctx)
	res := s.exec.Run(context.WithValue(ctx, skillDepthKey{}, depth+1), executor.Request{
		Code:       sk.Code,
		Language:   executor.Language(sk.Language),
		Args:       args,
		Parent:     executor.RunFrom(ctx),
		Dispatcher: dispatcher{s: s, caller: caller},
		Functions:  s.functions(),
	})
	if res.Error != nil {
		msg := fmt.Sprintf("skill %s failed: %s: %s", name, res.Error.Kind, res.Error.Message)
		if res.Error.Line > 0 {
			msg += fmt.Sprintf(" (line %d of the skill)", res.Error.Line)
		}
		return nil, &tools.Error{Code: "skill_failed", Message: msg}
	}
	return res.Value, nil
}

// skillAdminTools are skills.save, skills.list and skills.delete.
func (s *Server) skillAdminTools() []tools.Tool {
	return []tools.Tool{
		{
			Name:    "skills.save",
			Summary: "Save a program as a reusable skill, callable later as skills.<name>(args).",
			Description: "Save stores a program under a name. Later runs, in any session, call it as `await skills.<name>(args)`; inside the program the arguments are the global `args`, and its return value is the result. " +
				"Give an inputSchema to have calls validated. Saving an existing name replaces it with a new version. The code is checked for syntax errors first.",
			InputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$", "description": "Identifier: lower-case letters, digits, underscores."},
					"description": {"type": "string", "minLength": 1, "description": "What the skill does; its first line is its summary."},
					"code": {"type": "string", "minLength": 1, "description": "The program; it reads its arguments from args."},
					"language": {"type": "string", "enum": ["javascript", "typescript"], "default": "javascript"},
					"inputSchema": {"type": "object", "description": "JSON Schema of args."}
				},
				"required": ["name", "description", "code"],
				"additionalProperties": false
			}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"tool":{"type":"string"},"version":{"type":"integer"}},"required":["name","tool","version"]}`),
			Annotations:  tools.Annotations{Idempotent: true},
			Examples: []tools.Example{{
				Title:  "Save a skill that counts open bugs",
				Args:   json.RawMessage(`{"name":"open_bug_count","description":"Count open bugs of a repository.","code":"const r = await github.search_issues({query: 'repo:' + args.repo + ' is:open label:bug'}); return r.total_count","inputSchema":{"type":"object","properties":{"repo":{"type":"string"}},"required":["repo"]}}`),
				Result: json.RawMessage(`{"name":"open_bug_count","tool":"skills.open_bug_count","version":1}`),
			}},
			Errors: []tools.ErrorDoc{
				{Code: "invalid_arguments", Description: "A reserved or invalid name, a syntax error in the code (with its line), or an invalid inputSchema."},
				{Code: "quota_exceeded", Description: "Too many skills are saved."},
			},
			Positional: []string{"name", "description", "code"},
			Related:    []string{"skills.list", "skills.delete"},
			Handler:    s.saveSkill,
		},
		{
			Name:         "skills.list",
			Summary:      "List the saved skills with their descriptions and versions.",
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"skills":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"description":{"type":"string"},"language":{"type":"string"},"version":{"type":"integer"}}}}},"required":["skills"]}`),
			Annotations:  tools.Annotations{ReadOnly: true},
			Related:      []string{"skills.save"},
			Handler: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				all, err := s.cfg.Store.ListSkills(skillCtx(ctx))
				if err != nil {
					return nil, err
				}
				type row struct {
					Name        string `json:"name"`
					Description string `json:"description"`
					Language    string `json:"language"`
					Version     int64  `json:"version"`
				}
				rows := []row{}
				for _, sk := range all {
					rows = append(rows, row{sk.Name, sk.Description, sk.Language, sk.Version})
				}
				return json.Marshal(map[string]any{"skills": rows})
			},
		},
		{
			Name:         "skills.delete",
			Summary:      "Delete a saved skill.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"deleted":{"type":"boolean"}},"required":["deleted"]}`),
			Annotations:  tools.Annotations{Destructive: true, Idempotent: true},
			Positional:   []string{"name"},
			Related:      []string{"skills.list"},
			Handler: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				var in struct {
					Name string `json:"name"`
				}
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, tools.Errorf(tools.CodeInvalidArguments, "%v", err)
				}
				if err := s.cfg.Store.DeleteSkill(skillCtx(ctx), in.Name); err != nil {
					if errors.Is(err, memory.ErrNotFound) {
						return json.RawMessage(`{"deleted":false}`), nil
					}
					return nil, err
				}
				return json.RawMessage(`{"deleted":true}`), nil
			},
		},
	}
}

func (s *Server) saveSkill(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Code        string          `json:"code"`
		Language    string          `json:"language"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "%v", err)
	}
	if reservedSkills[in.Name] {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "name %q is taken by skills.%s itself; choose another", in.Name, in.Name)
	}
	if in.Language == "" {
		in.Language = string(executor.JavaScript)
	}
	if err := checkSyntax(in.Code, in.Language); err != nil {
		return nil, err
	}
	if len(in.InputSchema) > 0 {
		if _, err := tools.CompileSchema(in.InputSchema); err != nil {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "inputSchema: %v", err)
		}
	}
	sk, err := s.cfg.Store.SaveSkill(skillCtx(ctx), memory.Skill{
		Name:        in.Name,
		Description: in.Description,
		Code:        in.Code,
		Language:    in.Language,
		InputSchema: in.InputSchema,
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"name": sk.Name, "tool": "skills." + sk.Name, "version": sk.Version})
}

// checkSyntax reports a syntax error in a skill's code when it is saved,
// rather than when it is first called.
func checkSyntax(code, language string) error {
	if e := executor.Check(code, executor.Language(language)); e != nil {
		where := ""
		if e.Line > 0 {
			where = fmt.Sprintf(" at line %d, column %d", e.Line, e.Column)
		}
		return tools.Errorf(tools.CodeInvalidArguments, "code: syntax error%s: %s", where, strings.TrimPrefix(e.Message, "SyntaxError: "))
	}
	return nil
}
