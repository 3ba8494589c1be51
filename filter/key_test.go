package filter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "keys")
	path := filepath.Join(dir, "filter.key")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", st.Mode().Perm())
	}
	dst, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("key directory mode %04o, want 0700", dst.Mode().Perm())
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if k1 != k2 {
		t.Error("second load gave another key")
	}
	if k1 == (Key{}) {
		t.Error("key is all zero")
	}
	// No temporary files are left beside the key.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("key directory holds %d entries, want 1", len(entries))
	}
	// Printing the key does not show it.
	raw, _ := os.ReadFile(path)
	for _, s := range []string{k1.String(), fmt.Sprintf("%v %+v %#v %s", k1, k1, k1, k1)} {
		if strings.Contains(s, strings.TrimSpace(string(raw))) || strings.Contains(s, strings.TrimSpace(string(raw))[:16]) {
			t.Errorf("formatted key %q shows the key", s)
		}
	}
}

func TestLoadOrCreateKeyRefusesOpenPermissions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "filter.key")
	if _, err := LoadOrCreateKey(path); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreateKey(path)
		var pe *KeyPermissionError
		if !errors.As(err, &pe) || pe.Mode.Perm() != mode {
			t.Fatalf("mode %04o: err = %v, want *KeyPermissionError", mode, err)
		}
		if !strings.Contains(err.Error(), "chmod 600") || !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not say how to fix it", err)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(path); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
}

func TestLoadOrCreateKeyBadContent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"short":  "abcd\n",
		"nothex": strings.Repeat("zz", KeySize) + "\n",
		"empty":  "",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadOrCreateKey(path); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := LoadOrCreateKey(dir); err == nil {
		t.Error("a directory as key file: no error")
	}
}

func TestLoadOrCreateKeyConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "filter.key")
	keys := make([]Key, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k != keys[0] {
			t.Fatal("concurrent first starts got different keys")
		}
	}
}

func TestRotateKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "filter.key")
	old, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	oldVault, _ := NewVault(old, "local", VaultOptions{})
	tok := oldVault.Tokenize(ClassEmail, "ada@example.com", nil)

	rotated, err := RotateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if rotated == old || rotated.ID() == old.ID() {
		t.Fatal("RotateKey kept the key")
	}
	loaded, err := LoadOrCreateKey(path)
	if err != nil || loaded != rotated {
		t.Fatalf("after rotation LoadOrCreateKey = %v, %v", loaded.ID(), err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("rotated key mode %04o", st.Mode().Perm())
	}
	newVault, _ := NewVault(rotated, "local", VaultOptions{})
	if newVault.Tokenize(ClassEmail, "ada@example.com", nil) == tok {
		t.Error("same token under the rotated key")
	}
	// The old vault still resolves what it issued.
	if got, err := oldVault.ResolveString(tok, "mail.send"); err != nil || got != "ada@example.com" {
		t.Errorf("old vault after rotation: %q, %v", got, err)
	}
}

func TestKeyFromBytes(t *testing.T) {
	t.Parallel()
	if _, err := KeyFromBytes(make([]byte, 31)); err == nil {
		t.Error("31 bytes accepted")
	}
	k, err := KeyFromBytes(make([]byte, KeySize))
	if err != nil || k != (Key{}) {
		t.Errorf("KeyFromBytes = %v, %v", k, err)
	}
}
