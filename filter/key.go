package filter

import (
	"bytes"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of a tokenization key in bytes.
const KeySize = 32

// Key is the per-installation secret under which tokens are derived. Its
// String and GoString methods never show the key.
type Key struct {
	b [KeySize]byte
}

// NewKey returns a random key, for installations that keep none on disk
// and for tests.
func NewKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k.b[:]); err != nil {
		return Key{}, fmt.Errorf("generate key: %w", err)
	}
	return k, nil
}

// KeyFromBytes returns the key made of b, which must be KeySize bytes.
func KeyFromBytes(b []byte) (Key, error) {
	var k Key
	if len(b) != KeySize {
		return Key{}, fmt.Errorf("key: want %d bytes, got %d", KeySize, len(b))
	}
	copy(k.b[:], b)
	return k, nil
}

// ID returns a short fingerprint of the key (8 hex digits of its SHA-256)
// that can be logged to tell keys apart.
func (k Key) ID() string {
	sum := sha256.Sum256(k.b[:])
	return hex.EncodeToString(sum[:4])
}

// principalKeyInfo is the HKDF info that derives a principal's token key;
// the principal's name follows it.
const principalKeyInfo = "codecell/filter token key v1\x00"

// forPrincipal returns the key under which the tokens of one principal
// are derived: HKDF-Expand (RFC 5869, crypto/hkdf, SHA-256) of the
// installation key with the info principalKeyInfo + principal. The
// installation key is uniformly random, so it serves as the
// pseudorandom key without an extract step. The same value gets
// unrelated tokens under two principals, so a token shown to one tells
// nothing to another.
func (k Key) forPrincipal(principal string) (Key, error) {
	b, err := hkdf.Expand(sha256.New, k.b[:], principalKeyInfo+principal, KeySize)
	if err != nil {
		return Key{}, fmt.Errorf("derive key of principal: %w", err)
	}
	return KeyFromBytes(b)
}

// Derive returns size bytes derived from the key for another purpose,
// named by info, as the principals' token keys are (HKDF-Expand,
// SHA-256): a key that only those who hold the installation key can
// make, such as the one that seals a plan's steps in the store. info
// must not start with principalKeyInfo or sealKeyInfo.
func (k Key) Derive(info string, size int) ([]byte, error) {
	if strings.HasPrefix(info, principalKeyInfo) || strings.HasPrefix(info, sealKeyInfo) {
		return nil, fmt.Errorf("derive key: info %q is the filter's own", info)
	}
	b, err := hkdf.Expand(sha256.New, k.b[:], info, size)
	if err != nil {
		return nil, fmt.Errorf("derive key: %w", err)
	}
	return b, nil
}

func (k Key) String() string   { return "filter.Key(" + k.ID() + ")" }
func (k Key) GoString() string { return k.String() }

// KeyPermissionError is returned for a key file that users other than its
// owner may read or write.
type KeyPermissionError struct {
	Path string
	Mode fs.FileMode
}

func (e *KeyPermissionError) Error() string {
	return fmt.Sprintf("key file %s has mode %04o: group or others may access it; run chmod 600 %s (or remove the file to make a new key, which changes every token)",
		e.Path, e.Mode.Perm(), e.Path)
}

// LoadOrCreateKey reads the key stored at path, or creates one: a random
// key written as hex to a new file with mode 0600, in a directory created
// with mode 0700 if missing. It refuses a key file that group or others
// may access (a *KeyPermissionError) and a file that does not hold a key.
// Two processes starting together end up with the same key.
func LoadOrCreateKey(path string) (Key, error) {
	k, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Key{}, fmt.Errorf("create key directory: %w", err)
	}
	k, err = NewKey()
	if err != nil {
		return Key{}, err
	}
	tmp, err := writeTemp(path, k)
	if err != nil {
		return Key{}, err
	}
	defer os.Remove(tmp)
	// Link fails if another process created the key first; then use theirs.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKey(path)
		}
		return Key{}, fmt.Errorf("create key file: %w", err)
	}
	return k, nil
}

// RotateKey replaces the key at path by a new random one and returns it.
// Tokens derived under the old key no longer match new ones; vaults that
// hold the old key keep resolving the tokens they issued.
func RotateKey(path string) (Key, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Key{}, fmt.Errorf("create key directory: %w", err)
	}
	k, err := NewKey()
	if err != nil {
		return Key{}, err
	}
	tmp, err := writeTemp(path, k)
	if err != nil {
		return Key{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return Key{}, fmt.Errorf("rotate key: %w", err)
	}
	return k, nil
}

func readKey(path string) (Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return Key{}, fmt.Errorf("read key: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Key{}, fmt.Errorf("read key: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Key{}, fmt.Errorf("read key: %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return Key{}, &KeyPermissionError{Path: path, Mode: st.Mode()}
	}
	buf, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return Key{}, fmt.Errorf("read key: %w", err)
	}
	raw, err := hex.DecodeString(string(bytes.TrimSpace(buf)))
	if err != nil || len(raw) != KeySize {
		return Key{}, fmt.Errorf("read key: %s does not hold a %d-byte hex key", path, KeySize)
	}
	return KeyFromBytes(raw)
}

// writeTemp writes k to a new 0600 file beside path and returns its name.
func writeTemp(path string, k Key) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".key-*")
	if err != nil {
		return "", fmt.Errorf("write key: %w", err)
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", fmt.Errorf("write key: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.WriteString(hex.EncodeToString(k.b[:]) + "\n"); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("write key: %w", err)
	}
	return name, nil
}
