package sqlite

import (
	"github.com/codecell/codecell/memory"

	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestConcurrentWritersAndReaders runs 50 goroutines that write and read
// at once: none may see "database is locked", and no write may be lost.
func TestConcurrentWritersAndReaders(t *testing.T) {
	s := openTest(t, Config{Readers: 8})
	const workers, each = 50, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*3)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := as(context.Background(), fmt.Sprintf("p%d", w%5))
			for i := 0; i < each; i++ {
				if _, err := s.Remember(ctx, memory.RememberInput{Content: fmt.Sprintf("worker %d note %d about deploys", w, i), Tags: []string{fmt.Sprintf("w%d", w)}}); err != nil {
					errs <- err
				}
				if _, err := s.Recall(ctx, memory.RecallInput{Query: "deploys note", Limit: 5}); err != nil {
					errs <- err
				}
				if w%3 == 0 {
					if _, _, err := s.WriteFile(ctx, fmt.Sprintf("w%d/%d.txt", w, i), []byte("data")); err != nil {
						errs <- err
					}
				}
				if w%4 == 0 {
					if err := s.RecordExecution(ctx, memory.Execution{ID: fmt.Sprintf("e-%d-%d", w, i), Status: "ok"}); err != nil {
						errs <- err
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent operation: %v", err)
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Memories != workers*each {
		t.Fatalf("%d memories, want %d", st.Memories, workers*each)
	}
	var files int
	for w := 0; w < workers; w += 3 {
		files += each
	}
	if st.Files != files {
		t.Fatalf("%d files, want %d", st.Files, files)
	}
	for p := 0; p < 5; p++ {
		ms, _ := s.MemoryStats(as(t.Context(), fmt.Sprintf("p%d", p)))
		if ms.Memories != workers*each/5 {
			t.Fatalf("principal p%d has %d memories, want %d", p, ms.Memories, workers*each/5)
		}
	}
	if err := s.IntegrityCheck(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestTwoProcessesShareTheFile opens the same file twice, as a server and
// a CLI would, and writes through both.
func TestTwoStoresShareTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openTestAt(t, path)
	b := openTestAt(t, path)
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b} {
		wg.Add(1)
		go func(s *Store) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := s.Remember(context.Background(), memory.RememberInput{Content: fmt.Sprintf("note %d", i)}); err != nil {
					t.Errorf("remember: %v", err)
				}
			}
		}(s)
	}
	wg.Wait()
	st, _ := a.Stats(t.Context())
	if st.Memories != 100 {
		t.Fatalf("%d memories, want 100", st.Memories)
	}
}

const crashEnv = "CODECELL_MEMORY_CRASH_CHILD"

// TestCrashChild is the child of TestCrashDurability: it writes until it is
// killed, printing the id of each memory after its transaction commits.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("run by TestCrashDurability")
	}
	s, err := Open(context.Background(), Config{Path: path}, nil)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		m, err := s.Remember(context.Background(), memory.RememberInput{Content: fmt.Sprintf("crash test memory %d with some words", i), Tags: []string{"crash"}})
		if err != nil {
			fmt.Println("remember error:", err)
			os.Exit(2)
		}
		if _, _, err := s.WriteFile(context.Background(), fmt.Sprintf("f/%d", i%50), []byte(strings.Repeat("z", i%2000))); err != nil {
			fmt.Println("write error:", err)
			os.Exit(2)
		}
		fmt.Fprintf(out, "ack %d\n", m.ID)
		out.Flush()
	}
}

// TestCrashDurability kills a writing child process with SIGKILL and
// checks that every write it acknowledged survived and the database is
// intact.
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var acked []int64
		sc := bufio.NewScanner(stdout)
		killAt := 200 + round*137
		for sc.Scan() {
			line := sc.Text()
			if id, ok := strings.CutPrefix(line, "ack "); ok {
				n, _ := strconv.ParseInt(id, 10, 64)
				acked = append(acked, n)
				if len(acked) == killAt {
					cmd.Process.Signal(syscall.SIGKILL)
				}
			} else if strings.Contains(line, "error") {
				t.Fatalf("child: %s", line)
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child ended with %v, not by SIGKILL", err)
		}
		if len(acked) < killAt {
			t.Fatalf("child acknowledged %d writes before dying, want %d", len(acked), killAt)
		}
		s, err := Open(t.Context(), Config{Path: path}, nil)
		if err != nil {
			t.Fatalf("reopen after crash: %v", err)
		}
		if err := s.IntegrityCheck(t.Context()); err != nil {
			t.Fatal(err)
		}
		found, err := existingIDs(t.Context(), s.r, "", acked)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range acked {
			if !found[id] {
				t.Fatalf("round %d: acknowledged memory %d is missing after the crash", round, id)
			}
		}
		// Indexes agree with the table.
		var mems, vecs, codes int
		s.r.QueryRow(`SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memory_vectors), (SELECT count(*) FROM memory_codes)`).Scan(&mems, &vecs, &codes)
		if mems != vecs || mems != codes {
			t.Fatalf("after crash: %d memories, %d vectors, %d codes", mems, vecs, codes)
		}
		r, err := s.Recall(t.Context(), memory.RecallInput{Query: "crash test memory", Limit: 3})
		if err != nil || len(r.Results) != 3 {
			t.Fatalf("recall after crash: %v", err)
		}
		s.Close()
		t.Logf("round %d: %d acknowledged writes, all present; %d memories in total", round, len(acked), mems)
		time.Sleep(10 * time.Millisecond)
	}
}
