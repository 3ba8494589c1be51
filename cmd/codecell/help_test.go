package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// oneDash matches a flag listed as -name rather than --name.
var oneDash = regexp.MustCompile(`(?m)^\s+-[a-z]`)

// runCLI runs the program in-process and returns its exit status, stdout
// and stderr as main would produce them.
func runCLI(t testing.TB, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	code := exitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestHelp checks that every command's -h and --help print to stdout and
// succeed, with flags as --name PLACEHOLDER and real defaults, and that each
// command lists only the flags it takes.
func TestHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		want    []string
		notWant []string
	}{
		{[]string{"--help"}, []string{"codecell serve", "codecell exec"}, nil},
		{[]string{"-h"}, []string{"codecell serve"}, nil},
		{[]string{"help"}, []string{"codecell serve"}, nil},
		{[]string{"help", "exec"}, []string{"Usage: codecell exec", "--lang LANG"}, nil},
		{
			[]string{"serve", "--help"},
			[]string{"Usage: codecell serve", "--http ADDR", "--expose MODE", "--catalog PATH", "--data-dir DIR", "--timeout DURATION",
				"--pool N", "--config FILE", "default none: serve stdio", "default none: only the built-in tools", "one per CPU",
				"--stdio\n"},
			nil,
		},
		{[]string{"serve", "-h"}, []string{"Usage: codecell serve"}, nil},
		{
			[]string{"exec", "-h"},
			[]string{"Usage: codecell exec", "--lang LANG", "--run-timeout DURATION", "--catalog PATH", "--timeout DURATION", "javascript (js)"},
			[]string{"--http", "--expose", "--shutdown-grace", "--pool", "--queue-wait"},
		},
		{[]string{"exec", "--help"}, []string{"Usage: codecell exec"}, nil},
		{[]string{"config", "--help"}, []string{"Usage: codecell config", "init", "check", "rotate-key"}, nil},
		{[]string{"config", "-h"}, []string{"Usage: codecell config"}, nil},
		{[]string{"config", "init", "--help"}, []string{"Usage: codecell config init", "--force"}, nil},
		{[]string{"config", "check", "--help"}, []string{"Usage: codecell config check", "--http ADDR", "--data-dir DIR"}, nil},
		{[]string{"config", "rotate-key", "-h"}, []string{"Usage: codecell config rotate-key", "--data-dir DIR"}, []string{"--http", "--timeout"}},
		{[]string{"config", "import-claude", "-h"}, []string{"Usage: codecell config import-claude", "--out FILE", "claude_desktop_config.json"}, []string{"--http", "--timeout"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, "", tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing on stderr", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("help does not contain %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(stdout, w) {
					t.Errorf("help contains %q:\n%s", w, stdout)
				}
			}
			for _, bad := range []string{"default )", " value\n"} {
				if strings.Contains(stdout, bad) {
					t.Errorf("help contains %q:\n%s", bad, stdout)
				}
			}
			if oneDash.MatchString(stdout) {
				t.Errorf("help lists a flag with one dash:\n%s", stdout)
			}
		})
	}
}

// TestUsageErrors checks that mistakes on the command line exit 2 with
// one line on stderr that says what to do, and nothing on stdout.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"srve"}, `unknown command "srve"; did you mean serve? (codecell --help lists the commands)`},
		{[]string{"serve", "--htp", "127.0.0.1:0"}, "serve: unknown flag --htp; did you mean --http? (codecell serve -h lists the flags)"},
		{[]string{"exec", "--http", "127.0.0.1:0", "-"}, "exec: unknown flag --http"},
		{[]string{"serve", "extra"}, `serve takes no arguments`},
		{[]string{"serve", "--stdio", "--http", "127.0.0.1:0"}, "serve: --stdio and --http contradict each other; give one"},
		{[]string{"exec"}, "exec takes one argument: a program file, or - to read it from stdin"},
		{[]string{"exec", "--lang", "python", "-"}, `--lang "python": want javascript (js) or typescript (ts)`},
		{[]string{"exec", "--run-timeout", "soon", "-"}, `exec: invalid value "soon" for flag --run-timeout`},
		{[]string{"config"}, "config needs a command: init, check, rotate-key or import-claude"},
		{[]string{"config", "chek"}, `unknown config command "chek"; did you mean check?`},
		{[]string{"config", "init", "--forse"}, "config init: unknown flag --forse; did you mean --force?"},
		{[]string{"config", "init", "a.toml", "b.toml"}, `config init takes one file, got ["a.toml" "b.toml"]`},
		{[]string{"config", "rotate-key", "now"}, `config rotate-key takes no arguments, got ["now"]`},
		{[]string{"config", "check", "x.toml"}, `config check takes no arguments, got ["x.toml"]; to check a file, pass --config FILE`},
		{[]string{"serve", "--log-level"}, "serve: flag needs an argument: --log-level"},
		{[]string{"version", "--short"}, `version takes no arguments`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, "", tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.want)
			}
			if n := strings.Count(strings.TrimSuffix(stderr, "\n"), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one:\n%s", n+1, stderr)
			}
		})
	}
}

func TestExecLanguage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lang, path string
		want       string
	}{
		{"", "prog.js", "javascript"},
		{"", "prog.ts", "typescript"},
		{"", "prog.mts", "typescript"},
		{"", "-", "javascript"},
		{"ts", "-", "typescript"},
		{"TS", "-", "typescript"},
		{"typescript", "prog.js", "typescript"},
		{"js", "prog.ts", "javascript"},
		{"javascript", "-", "javascript"},
	}
	for _, tt := range tests {
		t.Run(tt.lang+" "+tt.path, func(t *testing.T) {
			got, err := execLanguage(tt.lang, tt.path)
			if err != nil || string(got) != tt.want {
				t.Errorf("execLanguage(%q, %q) = %q, %v; want %q", tt.lang, tt.path, got, err, tt.want)
			}
		})
	}
}
