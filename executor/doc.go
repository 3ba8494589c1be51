// Package executor runs untrusted JavaScript and TypeScript programs in
// QuickJS (modernc.org/libquickjs, QuickJS transpiled to pure Go, through
// the thin layer of internal/engine) and returns a record of each run.
//
// It owns the sandbox: a pool that gives every run a fresh VM — built
// once, then reset after each run from a snapshot of its heap taken when
// it was built (engine.VM.Reset), which nothing a program does survives
// and which costs a tenth of building one —, the prelude that installs tool namespaces (util.echo),
// tools.call, console and progress, the bridge that turns tool calls into
// concurrent calls through a Dispatcher, TypeScript stripping with
// esbuild, and the limits — deadline, heap, stack, code size, tool calls,
// console output, result size, nesting depth and queue wait — each
// reported as its own error Kind.
//
// It imports no other codecell package: tools reach it only through the
// Dispatcher interface and a Layout of function names. It does not filter
// results (package filter) or speak MCP (package mcpserver).
//
// A program has no file system, network, timers or process access; the
// only way out is a tool call.
//
// # Isolation
//
// QuickJS polls for an interrupt only in its bytecode loop: a built-in
// that loops in C (indexOf over {length: 2**53-1}, join over a sparse
// array of length 2**32-1, sort over the largest typed array) never
// looks, and a goroutine cannot be stopped from outside. So where the VMs
// live decides what a deadline means.
//
// With IsolationProcess (the default when Config.WorkerCommand is set),
// the VMs of each pool slot live in a sandbox worker process: the same
// binary, started with an empty environment, in a process group of its
// own, dying with the server (stdin EOF; on Linux also the parent-death
// signal). Runs take the server's priority; a worker resets a run's VM
// for the next at the run's priority, builds and closes VMs on a thread
// of lower priority (Linux), and one whose run does not
// stop when interrupted drops to the lowest priority until it is killed. The executor speaks to it over
// pipes in length-prefixed binary frames (protocol.go): the program and
// its limits, tool calls and their results, console lines, progress, an
// interrupt, the outcome. At a run's deadline, or when its context ends,
// the executor interrupts the VM; when the run has not ended killGrace
// later, it kills the worker, ends the run with its reason (timeout or
// canceled) and starts a replacement in the background. On Linux the
// deadline's kill does not wait for the server's scheduling: the worker
// kills itself at that instant by a kernel timer it sets for each root
// run (jobSpec.KillAt), and the executor wakes on a timerfd in the Go
// runtime's poller (alarm) rather than on a Go timer, which waits for
// the thread of the P that set it. So no run outlives its deadline or
// its cancellation by more than killGrace and the time the machine takes
// to schedule the server (the built-in sweep in the tests measures it);
// the pool keeps its size; Close kills the
// workers and returns at once. A worker prepares the VM of its next run
// ahead, as the in-process pool does, and says when it is ready: a run
// gets the idle worker given back last among those that are ready. Nested runs live in their root's
// worker, so killing the root kills them; one that alone cannot be
// stopped ends its own run at once, and its worker is killed when the
// root ends. The boundary costs a pipe round trip per tool call and a
// copy of each payload (see the benchmarks).
//
// With IsolationInProcess the VMs run on goroutines of this process, for
// embedding and benchmarks. Interrupts stop any program that runs
// bytecode, and the caller gets its result by the deadline and killGrace
// whatever the program does. A VM stuck inside a built-in is killed then:
// every VM has a heap of its own (internal/engine), which is taken away
// (mprotect), and the VM's goroutine, which panics on faults, leaves the
// engine at its next access to it, freeing its slot and its memory. Until
// then, though, it holds one of this process's Ps, and a long copy inside
// the engine cannot be preempted: the server's own timers, and its garbage
// collector, wait for it (up to a second on a loaded machine in the
// built-in sweep). That is why process isolation stays the default.
//
// # Nesting
//
// A tool call may run a program of its own (a skill) by naming the
// calling run, Call.Run, as the Parent of its Request. Nested runs are
// charged to their root: they take no pool slot, end when their parent
// ends and by its deadline, nest at most Config.MaxDepth deep, and share
// a bounded heap and concurrency (see Request.Parent).
package executor
