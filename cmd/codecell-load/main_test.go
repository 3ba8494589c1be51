package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandLine checks help and usage errors, which need no server.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "codecell")
	tests := []struct {
		name    string
		args    []string
		usage   bool   // want a usageError
		wantOut string // on stdout when there is no error
		wantErr string
	}{
		{name: "help", args: []string{"-h"}, wantOut: "Usage: codecell-load"},
		{name: "long help", args: []string{"--help"}, wantOut: "-clients"},
		{name: "unknown flag", args: []string{"-client", "3"}, usage: true, wantErr: "flag provided but not defined: -client (codecell-load -h lists the flags)"},
		{name: "argument", args: []string{"bin/codecell"}, usage: true, wantErr: "takes no arguments"},
		{name: "no binary", args: []string{"-bin", missing}, usage: true, wantErr: "no codecell binary at " + missing + ": build it with make build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := run(context.Background(), tt.args, &out)
			var ue usageError
			if tt.usage != errors.As(err, &ue) || (err == nil) != (tt.wantErr == "") {
				t.Fatalf("error %v, want a usage error: %v", err, tt.usage)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout %q does not contain %q", out.String(), tt.wantOut)
			}
		})
	}
}
