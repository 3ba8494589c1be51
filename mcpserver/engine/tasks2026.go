package engine

// Forget drops task t at once: the run of a call that could have become a
// task of the 2026 tasks extension (mcpserver's tasks2026.go) but ended
// before it did, or was refused. It counts against no bound, and its id —
// never sent — names no task.
func (ts *Tasks) Forget(t *Task) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.mu.Lock()
	t.finished, t.dropped, t.body = true, true, nil
	t.mu.Unlock()
	delete(ts.byID, t.id)
}
