//go:build !linux

package main

import "syscall"

// serverAttr is nil where a child cannot be tied to its parent's end.
func serverAttr() *syscall.SysProcAttr { return nil }
