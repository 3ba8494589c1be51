package main

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// This file reads the [openapi.NAME] tables of the configuration: one
// OpenAPI source each (tools/openapi.Config), whose name is its category.
//
//	[openapi.github]
//	spec = "https://raw.githubusercontent.com/github/rest-api-description/main/descriptions/api.github.com/api.github.com.json"
//	auth = { type = "bearer", token_env = "GITHUB_TOKEN" }
//	read_only = true

// decodeTables decodes a section that is a table of named tables, such as
// [openapi.github], into dst, a map of structs, one table and one key at
// a time, so that one bad value does not hide the others. Unknown keys are
// reported with the nearest known one, and marked reported so that
// decodeFile does not report them again.
func decodeTables(md toml.MetaData, section string, prim toml.Primitive, dst reflect.Value, reported map[string]bool) []error {
	var errs []error
	if t := md.Type(section); t != "Hash" && t != "" { // "" for a table made implicit by [section.NAME]
		reported[section] = true
		return []error{configError{section, fmt.Sprintf("want tables such as [%s.NAME], got %s", section, tomlType(t))}}
	}
	var tables map[string]toml.Primitive
	if err := md.PrimitiveDecode(prim, &tables); err != nil {
		reported[section] = true
		return []error{configError{section, tomlError(err)}}
	}
	if dst.IsNil() {
		dst.Set(reflect.MakeMap(dst.Type()))
	}
	elem := dst.Type().Elem()
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		at := toml.Key{section, name}
		if t := md.Type(at...); t != "Hash" {
			errs = append(errs, configError{at.String(), fmt.Sprintf("want a table ([%s]), got %s", at, tomlType(t))})
			reported[at.String()] = true
			continue
		}
		v := reflect.New(elem).Elem()
		errs = append(errs, decodeStruct(md, at, tables[name], v, reported)...)
		dst.SetMapIndex(reflect.ValueOf(name), v)
	}
	return errs
}

// decodeStruct decodes the table at key into v, a struct, field by field;
// a field that is a struct itself (such as auth) is a table decoded the
// same way.
func decodeStruct(md toml.MetaData, at toml.Key, prim toml.Primitive, v reflect.Value, reported map[string]bool) []error {
	var values map[string]toml.Primitive
	if err := md.PrimitiveDecode(prim, &values); err != nil {
		reported[at.String()] = true
		return []error{configError{at.String(), tomlError(err)}}
	}
	fields := map[string]int{}
	var names []string
	for i := range v.NumField() {
		n := tomlName(v.Type().Field(i))
		fields[n] = i
		names = append(names, n)
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(values)) {
		kk := append(append(toml.Key{}, at...), k)
		i, ok := fields[k]
		if !ok {
			msg := "unknown key"
			if s := closestWord(k, names); s != "" {
				msg += "; did you mean " + s + "?"
			}
			errs = append(errs, configError{kk.String(), msg})
			reported[kk.String()] = true
			continue
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct && md.Type(kk...) == "Hash" {
			errs = append(errs, decodeStruct(md, kk, values[k], f, reported)...)
			continue
		}
		nv := reflect.New(f.Type())
		if err := md.PrimitiveDecode(values[k], nv.Interface()); err != nil {
			errs = append(errs, configError{kk.String(), typeProblem(md, kk, f.Type(), err)})
			reported[kk.String()] = true
			continue
		}
		f.Set(nv.Elem())
	}
	return errs
}

// validateOpenAPI checks every [openapi.NAME] source that is not
// disabled: its name must make a category, no two may make the same one,
// and its configuration must pass openapi.Config.Check. A credential
// whose environment variable is unset is not an error of the
// configuration: that source is unavailable until it is set, and the
// others serve (see openAPIWarnings).
func (c *Config) validateOpenAPI(env func(string) string) []error {
	var errs []error
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.OpenAPI)) {
		key := toml.Key{"openapi", name}.String()
		cat := openapi.CategoryFor(name)
		if !tools.ValidCategory(cat) {
			errs = append(errs, configError{key, "the name makes no category: use letters, digits and underscores"})
			continue
		}
		if other, ok := seen[cat]; ok {
			errs = append(errs, configError{key, fmt.Sprintf("its category %s is that of [%s] too; rename one", cat, other)})
		}
		seen[cat] = key
		oc := c.OpenAPI[name]
		if oc.Disabled {
			continue
		}
		err := oc.Check(env)
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				var ce *openapi.ConfigError
				if errors.As(e, &ce) && ce.Env != "" {
					continue
				}
				if errors.As(e, &ce) {
					errs = append(errs, configError{key + "." + ce.Key, ce.Msg})
				} else {
					errs = append(errs, configError{key, e.Error()})
				}
			}
		}
	}
	return errs
}

// openAPIEnv are the environment variables the OpenAPI sources name for
// their credentials: known, so not reported as typos when they start with
// CODECELL_.
func openAPIEnv(cfg Config) map[string]bool {
	named := map[string]bool{}
	for _, oc := range cfg.OpenAPI {
		for _, v := range []string{oc.Auth.TokenEnv, oc.Auth.UsernameEnv, oc.Auth.PasswordEnv, oc.Auth.KeyEnv} {
			if v != "" {
				named[v] = true
			}
		}
	}
	return named
}

// openAPIWarnings names the enabled sources that are unavailable in this
// environment because a credential's variable is unset, each with what to
// do; config check prints them, and serve marks those sources unavailable.
func openAPIWarnings(cfg Config, env func(string) string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.OpenAPI)) {
		oc := cfg.OpenAPI[name]
		if oc.Disabled {
			continue
		}
		err := oc.Check(env)
		if vars, _ := openapi.MissingEnv(err); len(vars) > 0 {
			var keys []string
			var joined interface{ Unwrap() []error }
			if errors.As(err, &joined) {
				for _, e := range joined.Unwrap() {
					var ce *openapi.ConfigError
					if errors.As(e, &ce) && ce.Env != "" {
						keys = append(keys, fmt.Sprintf("%s names %s", ce.Key, ce.Env))
					}
				}
			}
			out = append(out, fmt.Sprintf("[openapi.%s] will be unavailable: %s, empty or unset in this environment; set %s where codecell runs (for a host such as Claude Desktop, in the \"env\" of codecell's entry), or set disabled = true",
				name, strings.Join(keys, ", "), strings.Join(vars, " and ")))
		}
	}
	return out
}
