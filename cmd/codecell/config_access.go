package main

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/codecell/codecell/mcpserver/engine"
)

// This file reads the [access] section, which says which tools each
// caller may reach, and server.read_only (--read-only), which keeps only
// the tools annotated read-only for everybody:
//
//	[access.principal.alice]        # a principal: a token's, an OAuth claim's, or stdio's "local"
//	allow = ["memory.*", "gh.get_*"]
//	deny  = ["*.delete*"]
//	read_only = true
//	[access.principal."*"]          # principals without a table of their own
//	read_only = true
//	[access.scope."codecell:read"]  # callers whose OAuth token grants the scope
//	read_only = true
//
// Every rule that applies to a caller restricts it, and it reaches the
// tools all of them allow (engine.Access).

// AccessConfig holds the [access] rules.
type AccessConfig struct {
	// Principal holds a rule per principal; "*" is the rule of
	// principals without one.
	Principal map[string]AccessRuleConfig `toml:"principal"`
	// Scope holds a rule per OAuth scope.
	Scope map[string]AccessRuleConfig `toml:"scope"`
}

// AccessRuleConfig is one [access.principal.NAME] or [access.scope.NAME]
// table.
type AccessRuleConfig struct {
	Allow    []string `toml:"allow"`
	Deny     []string `toml:"deny"`
	ReadOnly bool     `toml:"read_only"`
}

// validateAccess checks every rule's globs and names, each problem naming
// its key.
func (c *Config) validateAccess() []error {
	var errs []error
	for _, set := range []struct {
		kind  string
		rules map[string]AccessRuleConfig
	}{{"principal", c.Access.Principal}, {"scope", c.Access.Scope}} {
		for _, name := range slices.Sorted(maps.Keys(set.rules)) {
			key := toml.Key{"access", set.kind, name}.String()
			if strings.TrimSpace(name) == "" {
				errs = append(errs, configError{key, "an empty " + set.kind + " name"})
			}
			r := set.rules[name]
			for _, list := range []struct {
				field string
				globs []string
			}{{"allow", r.Allow}, {"deny", r.Deny}} {
				for i, g := range list.globs {
					if err := engine.CheckToolGlob(g); err != nil {
						errs = append(errs, configError{fmt.Sprintf("%s.%s[%d]", key, list.field, i), err.Error()})
					}
				}
			}
		}
	}
	return errs
}

// decodeNamedTables decodes the table at key whose values are tables,
// such as [access.principal.NAME], into dst, a map of structs, one table
// and one key at a time (decodeStruct), so that each problem names its
// key and one does not hide the others.
func decodeNamedTables(md toml.MetaData, at toml.Key, prim toml.Primitive, dst reflect.Value, reported map[string]bool) []error {
	if t := md.Type(at...); t != "Hash" && t != "" { // "" for a table made implicit by [at.NAME]
		reported[at.String()] = true
		return []error{configError{at.String(), fmt.Sprintf("want tables such as [%s.NAME], got %s", at, tomlType(t))}}
	}
	var tables map[string]toml.Primitive
	if err := md.PrimitiveDecode(prim, &tables); err != nil {
		reported[at.String()] = true
		return []error{configError{at.String(), tomlError(err)}}
	}
	if dst.IsNil() {
		dst.Set(reflect.MakeMap(dst.Type()))
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		kk := append(append(toml.Key{}, at...), name)
		if t := md.Type(kk...); t != "Hash" {
			errs = append(errs, configError{kk.String(), fmt.Sprintf("want a table ([%s]), got %s", kk, tomlType(t))})
			reported[kk.String()] = true
			continue
		}
		v := reflect.New(dst.Type().Elem()).Elem()
		errs = append(errs, decodeStruct(md, kk, tables[name], v, reported)...)
		dst.SetMapIndex(reflect.ValueOf(name), v)
	}
	return errs
}

// serverAccess is the engine.Access the configuration asks for.
func serverAccess(cfg Config) engine.Access {
	a := engine.Access{ReadOnly: cfg.Server.ReadOnly}
	convert := func(in map[string]AccessRuleConfig) map[string]engine.AccessRule {
		if len(in) == 0 {
			return nil
		}
		out := make(map[string]engine.AccessRule, len(in))
		for name, r := range in {
			out[name] = engine.AccessRule{Allow: r.Allow, Deny: r.Deny, ReadOnly: r.ReadOnly}
		}
		return out
	}
	a.Principals = convert(cfg.Access.Principal)
	a.Scopes = convert(cfg.Access.Scope)
	return a
}
