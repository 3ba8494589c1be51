//go:build race

package executor

// raceBuild is set in a build with the race detector, whose runtime maps
// terabytes of shadow memory as data: its sandbox workers (this binary)
// cannot run under a data limit (workerData).
const raceBuild = true
