package executor

// QueueBound is queueBound, for the tests of package executor_test.
func QueueBound(memory int64) int64 { return queueBound(memory) }
