package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildSaysWhatItDoes keeps `make build` (and so `make run`)
// saying, before the long first compile, that it is building and why it
// takes a while.
func TestMakeBuildSaysWhatItDoes(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	for _, target := range []string{"build", "run"} {
		cmd := exec.Command("make", "-n", target)
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n %s: %v", target, err)
		}
		lines := strings.Split(string(out), "\n")
		echo := slicesIndex(lines, "first build")
		build := slicesIndex(lines, "go build")
		if echo < 0 || build < 0 || echo > build {
			t.Errorf("make %s does not say what the first build does before it starts:\n%s", target, out)
		}
	}
}

// slicesIndex is the index of the first line containing s, or -1.
func slicesIndex(lines []string, s string) int {
	for i, l := range lines {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}
