package sqlite

import (
	"github.com/codecell/codecell/memory"

	"encoding/json"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

func TestTasks(t *testing.T) {
	clock := &testClock{t: time.Date(2025, 5, 1, 9, 0, 0, 0, time.UTC)}
	s := openTest(t, Config{Now: clock.now})
	ctx := t.Context()
	h := time.Hour
	overdue, err := s.AddTask(ctx, memory.TaskInput{Content: "file the quarterly report", DueAt: ptr(clock.t.Add(-2 * h))})
	if err != nil || !overdue.Overdue || overdue.Status != memory.StatusOpen || overdue.Layer != memory.Prospective {
		t.Fatalf("overdue task: %+v %v", overdue, err)
	}
	soon, _ := s.AddTask(ctx, memory.TaskInput{Content: "review the migration PR", DueAt: ptr(clock.t.Add(3 * h)), Tags: []string{"review"}})
	later, _ := s.AddTask(ctx, memory.TaskInput{Content: "plan the offsite", DueAt: ptr(clock.t.Add(72 * h))})
	undated, _ := s.AddTask(ctx, memory.TaskInput{Content: "learn Rust someday"})
	done, _ := s.AddTask(ctx, memory.TaskInput{Content: "rotate keys", Status: memory.StatusDone, DueAt: ptr(clock.t.Add(-5 * h))})
	mustRemember(t, s, ctx, memory.RememberInput{Content: "not a task"})

	ids := func(ts []memory.Task) []int64 {
		var out []int64
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	cases := []struct {
		name string
		q    memory.TaskQuery
		want []int64
	}{
		{"default open by due", memory.TaskQuery{}, []int64{overdue.ID, soon.ID, later.ID, undated.ID}},
		{"overdue", memory.TaskQuery{Overdue: true}, []int64{overdue.ID}},
		{"due within 24h", memory.TaskQuery{DueWithinHours: 24}, []int64{overdue.ID, soon.ID}},
		{"due before", memory.TaskQuery{DueBefore: ptr(clock.t.Add(100 * h))}, []int64{overdue.ID, soon.ID, later.ID}},
		{"done", memory.TaskQuery{Statuses: []memory.TaskStatus{memory.StatusDone}}, []int64{done.ID}},
		{"tags", memory.TaskQuery{Tags: []string{"review"}}, []int64{soon.ID}},
		{"limit", memory.TaskQuery{Limit: 2}, []int64{overdue.ID, soon.ID}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, err := s.ListTasks(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(ts)
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
	up, err := s.UpdateTask(ctx, memory.TaskUpdate{ID: overdue.ID, Status: ptr(memory.StatusDone), Note: "sent to finance"})
	if err != nil || up.Status != memory.StatusDone || up.Overdue {
		t.Fatalf("update task: %+v %v", up, err)
	}
	var meta struct {
		Notes []struct{ Note string } `json:"notes"`
	}
	json.Unmarshal(up.Metadata, &meta)
	if len(meta.Notes) != 1 || meta.Notes[0].Note != "sent to finance" {
		t.Fatalf("task note: %s", up.Metadata)
	}
	up, err = s.UpdateTask(ctx, memory.TaskUpdate{ID: soon.ID, DueAt: ptr(clock.t.Add(-h))})
	if err != nil || !up.Overdue {
		t.Fatalf("reschedule into the past: %+v %v", up, err)
	}
	fact := mustRemember(t, s, ctx, memory.RememberInput{Content: "a fact"})
	_, err = s.UpdateTask(ctx, memory.TaskUpdate{ID: fact.ID, Status: ptr(memory.StatusDone)})
	wantCode(t, err, tools.CodeInvalidArguments)
	_, err = s.ListTasks(ctx, memory.TaskQuery{Statuses: []memory.TaskStatus{"later"}})
	wantCode(t, err, tools.CodeInvalidArguments)
	st, _ := s.MemoryStats(ctx)
	if st.Tasks["open"] != 3 || st.Tasks["done"] != 2 || st.Tasks["overdue"] != 1 {
		t.Fatalf("task stats: %v", st.Tasks)
	}
}
