//go:build !race

package executor

// raceBuild is set in a build with the race detector (see race.go).
const raceBuild = false
