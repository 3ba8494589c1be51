package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// fakeStore is a store with only the operations its fields give, as a
// backend that is still growing: it remembers, recalls, gets and forgets.
type fakeStore struct {
	recall func(context.Context, memory.RecallInput) (memory.RecallResult, error)
}

func (fakeStore) PutResult(context.Context, memory.PutResultInput) (memory.ResultInfo, error) {
	return memory.ResultInfo{}, errors.New("not used")
}
func (fakeStore) ToolShapes(context.Context, string) (map[string]json.RawMessage, error) {
	return nil, nil
}
func (fakeStore) PutToolShape(context.Context, string, string, json.RawMessage) error { return nil }
func (fakeStore) ToolSet() memory.ToolSet                                             { return memory.ToolSet{} }
func (fakeStore) Close() error                                                        { return nil }
func (fakeStore) Remember(context.Context, memory.RememberInput) (memory.Memory, error) {
	return memory.Memory{ID: 1}, nil
}
func (f fakeStore) Recall(ctx context.Context, in memory.RecallInput) (memory.RecallResult, error) {
	return f.recall(ctx, in)
}
func (fakeStore) Get(context.Context, int64) (memory.Memory, error) { return memory.Memory{}, nil }
func (fakeStore) Forget(context.Context, memory.ForgetInput) (memory.ForgetResult, error) {
	return memory.ForgetResult{}, nil
}

// updatingStore has update and stats as well.
type updatingStore struct {
	fakeStore
	update func(context.Context, memory.UpdateInput) (memory.Memory, error)
}

func (u updatingStore) Update(ctx context.Context, in memory.UpdateInput) (memory.Memory, error) {
	return u.update(ctx, in)
}
func (updatingStore) MemoryStats(context.Context) (memory.MemoryStats, error) {
	return memory.MemoryStats{}, nil
}

func TestToolSetOfAGrowingStore(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	recalled := false
	core := fakeStore{recall: func(context.Context, memory.RecallInput) (memory.RecallResult, error) {
		recalled = true
		return memory.RecallResult{}, nil
	}}
	tests := []struct {
		name       string
		st         store
		wantUpdate string // "" when update must reach the store
	}{
		{"remember, recall, get, forget", core, "not available on this server's postgres store yet"},
		{"and update", updatingStore{fakeStore: core, update: func(context.Context, memory.UpdateInput) (memory.Memory, error) {
			return memory.Memory{ID: 7}, nil
		}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := toolSet(tc.st, "postgres", log)
			if ts.Memories == nil {
				t.Fatal("no memory tools for a store that remembers and recalls")
			}
			if ts.Graph != nil || ts.Tasks != nil || ts.Workspace != nil {
				t.Errorf("groups the store lacks have tools: %+v", ts)
			}
			if _, err := ts.Memories.Recall(t.Context(), memory.RecallInput{Query: "x"}); err != nil || !recalled {
				t.Errorf("recall did not reach the store: %v", err)
			}
			m, err := ts.Memories.Update(t.Context(), memory.UpdateInput{ID: 7})
			if tc.wantUpdate == "" {
				if err != nil || m.ID != 7 {
					t.Errorf("update: %+v, %v; want the store's answer", m, err)
				}
				return
			}
			var te *tools.Error
			if !errors.As(err, &te) || !strings.Contains(te.Message, tc.wantUpdate) {
				t.Errorf("update: %v, want a tool error saying %q", err, tc.wantUpdate)
			}
		})
	}
}

func TestServerStoreSaysWhatIsMissing(t *testing.T) {
	_, err := serverStore(fakeStore{}, "postgres")
	if err == nil || !strings.Contains(err.Error(), "postgres store cannot keep everything the MCP server keeps") {
		t.Fatalf("serverStore of a store without the server's parts: %v", err)
	}
}
