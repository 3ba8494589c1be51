package memory

import (
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
	overdue, err := s.AddTask(ctx, TaskInput{Content: "file the quarterly report", DueAt: ptr(clock.t.Add(-2 * h))})
	if err != nil || !overdue.Overdue || overdue.Status != StatusOpen || overdue.Layer != Prospective {
		t.Fatalf("overdue task: %+v %v", overdue, err)
	}
	soon, _ := s.AddTask(ctx, TaskInput{Content: "review the migration PR", DueAt: ptr(clock.t.Add(3 * h)), Tags: []string{"review"}})
	later, _ := s.AddTask(ctx, TaskInput{Content: "plan the offsite", DueAt: ptr(clock.t.Add(72 * h))})
	undated, _ := s.AddTask(ctx, TaskInput{Content: "learn Rust someday"})
	done, _ := s.AddTask(ctx, TaskInput{Content: "rotate keys", Status: StatusDone, DueAt: ptr(clock.t.Add(-5 * h))})
	mustRemember(t, s, ctx, RememberInput{Content: "not a task"})

	ids := func(ts []Task) []int64 {
		var out []int64
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	cases := []struct {
		name string
		q    TaskQuery
		want []int64
	}{
		{"default open by due", TaskQuery{}, []int64{overdue.ID, soon.ID, later.ID, undated.ID}},
		{"overdue", TaskQuery{Overdue: true}, []int64{overdue.ID}},
		{"due within 24h", TaskQuery{DueWithinHours: 24}, []int64{overdue.ID, soon.ID}},
		{"due before", TaskQuery{DueBefore: ptr(clock.t.Add(100 * h))}, []int64{overdue.ID, soon.ID, later.ID}},
		{"done", TaskQuery{Statuses: []TaskStatus{StatusDone}}, []int64{done.ID}},
		{"tags", TaskQuery{Tags: []string{"review"}}, []int64{soon.ID}},
		{"limit", TaskQuery{Limit: 2}, []int64{overdue.ID, soon.ID}},
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
	up, err := s.UpdateTask(ctx, TaskUpdate{ID: overdue.ID, Status: ptr(StatusDone), Note: "sent to finance"})
	if err != nil || up.Status != StatusDone || up.Overdue {
		t.Fatalf("update task: %+v %v", up, err)
	}
	var meta struct {
		Notes []struct{ Note string } `json:"notes"`
	}
	json.Unmarshal(up.Metadata, &meta)
	if len(meta.Notes) != 1 || meta.Notes[0].Note != "sent to finance" {
		t.Fatalf("task note: %s", up.Metadata)
	}
	up, err = s.UpdateTask(ctx, TaskUpdate{ID: soon.ID, DueAt: ptr(clock.t.Add(-h))})
	if err != nil || !up.Overdue {
		t.Fatalf("reschedule into the past: %+v %v", up, err)
	}
	fact := mustRemember(t, s, ctx, RememberInput{Content: "a fact"})
	_, err = s.UpdateTask(ctx, TaskUpdate{ID: fact.ID, Status: ptr(StatusDone)})
	wantCode(t, err, tools.CodeInvalidArguments)
	_, err = s.ListTasks(ctx, TaskQuery{Statuses: []TaskStatus{"later"}})
	wantCode(t, err, tools.CodeInvalidArguments)
	st, _ := s.MemoryStats(ctx)
	if st.Tasks["open"] != 3 || st.Tasks["done"] != 2 || st.Tasks["overdue"] != 1 {
		t.Fatalf("task stats: %v", st.Tasks)
	}
}
