//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hardening is what hardenProcess did, for the log.
type hardening struct {
	nonDumpable bool
	blanked     int   // environment values blanked in the initial block
	err         error // what could not be done
}

// hardenProcess makes the process non-dumpable, blanks, in the
// environment block the kernel shows as /proc/<pid>/environ, the values
// of every variable but a few harmless ones (keepEnv), and marks the
// descriptors it inherited beyond stdin, stdout and stderr close-on-exec,
// so that no child (an upstream server above all) inherits them. It runs
// before anything starts a child or reads the environment through C.
func hardenProcess() hardening {
	var h hardening
	if err := closeInheritedOnExec(); err != nil {
		h.err = fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	// Blank first: a non-dumpable process that is not root can no longer
	// open its own /proc/self/mem.
	h.blanked, h.err = blankEnvironBlock()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		h.err = errors.Join(h.err, fmt.Errorf("set non-dumpable: %w", err))
	} else {
		h.nonDumpable = true
	}
	return h
}

// selfExe is the path that executes this very program: /proc/self/exe,
// the kernel's link to the file the process was started from, which
// names that file even after another is renamed over its path (and the
// file cannot be written while it runs: ETXTBSY). codecell executes
// itself through it, as the shim of its upstream servers and as sandbox
// workers, so that a process of its user that replaces the binary's
// path does not get its replacement run, unconfined, for the next
// upstream or worker.
func selfExe() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err != nil {
		return "", err
	}
	return self, nil
}

// closeInheritedOnExec sets close-on-exec on every descriptor from 3 on.
// A host may start codecell with descriptors of its own open (a pipe, a
// log file); Go opens its own with close-on-exec, but leaves inherited
// ones as they are, and every child would inherit them in turn.
func closeInheritedOnExec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11: one at a time.
	entries, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	for _, e := range entries {
		fd, perr := strconv.Atoi(e.Name())
		if perr != nil || fd < 3 {
			continue
		}
		// The directory's own descriptor, closed by now, fails: fine.
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	}
	return nil
}

// hardenWorker makes a sandbox worker non-dumpable: it holds the values
// programs handle, which no other process of the user should read.
func hardenWorker() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// keepEnv reports whether a variable's value stays readable in the
// initial environment block: those that carry no secret and that C code
// linked into codecell (SQLite, libc) may read with getenv.
func keepEnv(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR",
		"SQLITE_TMPDIR", "PWD", "SHLVL", "HOSTNAME":
		return true
	}
	return strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, "XDG_")
}

// blankEnvironBlock overwrites with NUL bytes the values of the variables
// keepEnv does not keep, in the block at env_start..env_end of
// /proc/self/stat, through /proc/self/mem. Go copied the environment when
// the process started and reads only its copy: os.Getenv is unaffected.
// It returns how many values it blanked.
func blankEnvironBlock() (int, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which may hold spaces and ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc/self/stat: no command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// env_start and env_end are fields 50 and 51; fields[0] is field 3.
	if len(fields) < 49 {
		return 0, errors.New("/proc/self/stat: no env_start (Linux 3.5 or later has it)")
	}
	start, err1 := strconv.ParseUint(fields[47], 10, 64)
	end, err2 := strconv.ParseUint(fields[48], 10, 64)
	if err := errors.Join(err1, err2); err != nil || end <= start || end-start > 64<<20 {
		return 0, fmt.Errorf("/proc/self/stat: env_start %s, env_end %s", fields[47], fields[48])
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil {
		return 0, fmt.Errorf("read the environment block: %w", err)
	}
	n := 0
	for off := 0; off < len(block); {
		entry := block[off:]
		if j := bytes.IndexByte(entry, 0); j >= 0 {
			entry = entry[:j]
		}
		name, _, hasValue := bytes.Cut(entry, []byte("="))
		if !keepEnv(string(name)) {
			from := len(name)
			if hasValue {
				from++ // keep NAME=, blank the value
			}
			if from < len(entry) {
				clear(entry[from:])
				n++
			}
		}
		off += len(entry) + 1
	}
	if n == 0 {
		return 0, nil
	}
	if _, err := mem.WriteAt(block, int64(start)); err != nil {
		return 0, fmt.Errorf("write the environment block: %w", err)
	}
	return n, nil
}

// landlockABI returns the Landlock ABI version of the kernel, or 0 and why
// there is none.
func landlockABI() (int, string) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.ENOSYS:
		return 0, "this kernel has no Landlock (Linux 5.13 or later has it)"
	case errno == unix.EOPNOTSUPP:
		return 0, "Landlock is disabled in this kernel (add landlock to its lsm= boot parameter)"
	case errno != 0:
		return 0, "Landlock is not available: " + errno.Error()
	}
	return int(v), ""
}

// Access rights of Landlock, by the ABI that introduced them.
const (
	fsRightsV1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	// fileRights are those that apply to a file (not a directory).
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledRights are the file system rights the ABI knows, all of which the
// shim handles: REFER (2) so that files may still move between the
// directories it grants, TRUNCATE (3) and IOCTL_DEV (5) so that they too
// are denied below codecell's paths.
func handledRights(abi int) uint64 {
	r := uint64(fsRightsV1)
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// confineAndExec confines this process and executes path with args, its
// environment and working directory. Landlock: every right is granted
// everywhere (directory listings included) except below the protected
// paths, whose contents are denied; the paths the server was configured
// with are granted whole. Since Landlock only grants, "everything but P"
// is written as: every entry of each directory on the way from / to P,
// except the one leading to P. So a confined process cannot create or
// remove entries directly in those directories (such as the home
// directory), and an entry created there after it started is not its
// own. From ABI 4 on, it can connect to every TCP port but those of
// spec.DenyConnect, codecell's own listeners, which would serve it as
// their callers (attack27 T1), and bind every port but those of
// spec.DenyBind, the loopback services codecell sends requests to (T8);
// Landlock only grants, so that is a rule for each of the other ports. From ABI 6 on, it cannot signal processes
// outside its domain either; from ABI 1 on, it cannot ptrace them (nor
// read their memory or environment through /proc). no_new_privs keeps a
// setuid program from shedding it. It returns only when it failed,
// before executing anything.
func confineAndExec(spec confineSpec, path string, args []string) error {
	abi, why := landlockABI()
	if abi < 1 {
		return errors.New(why)
	}
	deny := map[int]uint64{} // port → the rights denied on it
	for right, ports := range map[uint64][]int{unix.LANDLOCK_ACCESS_NET_CONNECT_TCP: spec.DenyConnect, unix.LANDLOCK_ACCESS_NET_BIND_TCP: spec.DenyBind} {
		for _, port := range ports {
			if port < 1 || port > 65535 {
				return fmt.Errorf("cannot deny port %d", port)
			}
			deny[port] |= right
		}
	}
	handled := handledRights(abi)
	attr := rulesetAttr{handledFS: handled}
	size := unsafe.Offsetof(attr.handledNet)
	if abi >= landlockNetABI {
		if len(spec.DenyConnect) > 0 {
			attr.handledNet |= unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
		if len(spec.DenyBind) > 0 {
			attr.handledNet |= unix.LANDLOCK_ACCESS_NET_BIND_TCP
		}
		size = unsafe.Offsetof(attr.scoped)
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_SIGNAL
		size = unsafe.Sizeof(attr)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("create the Landlock ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	// Listing any directory, codecell's included, shows names only.
	if err := addRule(ruleset, "/", unix.LANDLOCK_ACCESS_FS_READ_DIR, handled); err != nil {
		return err
	}
	protect := map[string]bool{}
	ancestors := map[string]bool{}
	for _, p := range spec.Protect {
		if !filepath.IsAbs(p) || p == "/" {
			return fmt.Errorf("cannot protect %q", p)
		}
		protect[p] = true
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			ancestors[d] = true
			if d == "/" {
				break
			}
		}
	}
	for dir := range ancestors {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // what cannot be listed is not granted
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if protect[p] || ancestors[p] {
				continue
			}
			// An entry that vanished, or a symbolic link (whose
			// target's own place decides), gets no rule.
			_ = addRule(ruleset, p, handled, handled)
		}
	}
	for _, p := range spec.Allow {
		_ = addRule(ruleset, p, handled, handled)
	}
	if attr.handledNet != 0 {
		for port := range 65536 {
			rights := attr.handledNet &^ deny[port]
			if rights == 0 {
				continue
			}
			if err := addPortRule(ruleset, port, rights); err != nil {
				return err
			}
		}
	}
	runtime.LockOSThread() // the domain and no_new_privs are the thread's, which executes path
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if attr.handledNet != 0 {
		if err := denyMPTCP(); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("enter the Landlock domain: %w", errno)
	}
	err := syscall.Exec(path, append([]string{path}, args...), os.Environ())
	return fmt.Errorf("execute %s: %w", filepath.Base(path), err)
}

// addRule grants rights below path (a directory), or their part that
// applies to a file; a symbolic link is skipped.
func addRule(ruleset int, path string, rights, handled uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
	default:
		rights &= fileRights
	}
	rights &= handled
	if rights == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("grant %s: %w", path, errno)
	}
	return nil
}

// denyMPTCP puts the calling thread (and what it executes) under a
// seccomp filter that fails creating a Multipath TCP socket with
// EPROTONOSUPPORT, as a kernel without MPTCP does (Go, for one, falls back
// to TCP), and an io_uring instance, which creates sockets without the
// socket system call, with ENOSYS. Landlock's TCP rules do not cover MPTCP
// sockets: on Linux 6.18 a confined process connected to a denied port,
// and bound one, with them (Go listens with MPTCP by default). The
// system calls of another ABI (x32, a 32-bit program) fail with ENOSYS:
// their socket calls are not checked. It needs no_new_privs.
func denyMPTCP() error {
	var native uint32
	switch runtime.GOARCH {
	case "amd64":
		native = unix.AUDIT_ARCH_X86_64
	case "arm64":
		native = unix.AUDIT_ARCH_AARCH64
	default:
		return fmt.Errorf("deny Multipath TCP sockets: no seccomp filter for %s", runtime.GOARCH)
	}
	const (
		nrOffset    = 0        // seccomp_data.nr
		archOffset  = 4        // seccomp_data.arch
		protoOffset = 16 + 8*2 // the low half of seccomp_data.args[2], little-endian
		x32Bit      = 0x40000000
	)
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	// skipUnless jumps over the next instruction unless the word is k.
	skipUnless := func(op uint16, k uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k, Jt: 0, Jf: 1}
	}
	ret := func(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }
	allow := ret(unix.SECCOMP_RET_ALLOW)
	noSys := ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	filter := []unix.SockFilter{
		ld(archOffset),
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: native, Jt: 1, Jf: 0},
		noSys,
		ld(nrOffset),
	}
	if runtime.GOARCH == "amd64" {
		filter = append(filter, skipUnless(unix.BPF_JGE, x32Bit), noSys)
	}
	filter = append(filter,
		skipUnless(unix.BPF_JEQ, unix.SYS_IO_URING_SETUP), noSys,
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_SOCKET, Jt: 1, Jf: 0},
		allow,
		ld(protoOffset),
		skipUnless(unix.BPF_JEQ, unix.IPPROTO_MPTCP), ret(unix.SECCOMP_RET_ERRNO|uint32(unix.EPROTONOSUPPORT)),
		allow,
	)
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("deny Multipath TCP sockets: %w", err)
	}
	return nil
}

// landlockRuleNetPort is LANDLOCK_RULE_NET_PORT, whose attribute is
// netPortAttr (struct landlock_net_port_attr).
const landlockRuleNetPort = 2

type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// addPortRule grants rights on a TCP port.
func addPortRule(ruleset, port int, rights uint64) error {
	attr := netPortAttr{allowedAccess: rights, port: uint64(port)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), landlockRuleNetPort, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("grant port %d: %w", port, errno)
	}
	return nil
}

// workerConfinedArg is the argument a sandbox worker executes itself with
// once confined (confineWorkerAndExec).
const workerConfinedArg = "confined"

// workerConfines is true: a sandbox worker confines itself at start.
const workerConfines = true

// confineWorkerAndExec confines this sandbox worker and executes it again,
// with workerConfinedArg, inside the confinement: a Landlock domain and
// no_new_privs are a thread's, and the threads the Go runtime has already
// started would escape them, whereas every thread of the executed program
// is born inside. The domain grants nothing on the file system but
// reading and executing the files the program is mapped from (the binary,
// the dynamic loader and the libraries it loads, which the kernel and the
// loader open again at exec) and reading /etc/localtime; from ABI 4 on, it denies binding and
// connecting TCP sockets; from ABI 6 on, signalling processes and
// connecting to abstract Unix sockets outside it. A worker needs no file
// after start: its pipes are open. Without Landlock it sets no_new_privs
// only. It returns only when it failed, before executing anything. then,
// when not empty, follows workerConfinedArg in the executed argv (a
// transform process's transformArg).
func confineWorkerAndExec(then string) error {
	exe, err := selfExe()
	if err != nil {
		return fmt.Errorf("find this binary: %w", err)
	}
	runtime.LockOSThread() // the domain and no_new_privs are the thread's, which executes exe
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if abi, _ := landlockABI(); abi >= 1 {
		if err := restrictWorker(abi); err != nil {
			return err
		}
		if abi >= landlockNetABI {
			// Its TCP denial holds for MPTCP sockets only so.
			if err := denyMPTCP(); err != nil {
				return err
			}
		}
	}
	env := os.Environ()
	if os.Getenv("GOMAXPROCS") == "" {
		// The runtime of the executed program cannot read its cgroup's
		// CPU limit any more: it gets the value computed here.
		env = append(env, "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	}
	argv := []string{exe, workerCommandName, workerConfinedArg}
	if then != "" {
		argv = append(argv, then)
	}
	err = syscall.Exec(exe, argv, env)
	return fmt.Errorf("execute the sandbox worker: %w", err)
}

// restrictWorker puts the calling thread in the sandbox workers' Landlock
// domain (see confineWorkerAndExec).
func restrictWorker(abi int) error {
	handled := handledRights(abi)
	attr := rulesetAttr{handledFS: handled}
	size := unsafe.Offsetof(attr.handledNet)
	if abi >= 4 {
		attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size = unsafe.Offsetof(attr.scoped)
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		size = unsafe.Sizeof(attr)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("create the Landlock ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	files, err := mappedFiles()
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := addFileRule(ruleset, f, (unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_EXECUTE)&handled); err != nil {
			return err
		}
	}
	// The time zone, which the VM's C library reads (programs' Date in
	// local time): public data, granted where it is.
	_ = addFileRule(ruleset, localtime, unix.LANDLOCK_ACCESS_FS_READ_FILE)
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("enter the Landlock domain: %w", errno)
	}
	return nil
}

// localtime is the file that says the system's time zone.
const localtime = "/etc/localtime"

// mappedFiles lists the regular files this process is mapped from, as
// /proc/self/maps names them: the binary, the dynamic loader and the
// shared libraries.
func mappedFiles() ([]string, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var files []string
	for _, line := range strings.Split(string(maps), "\n") {
		// address perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 || f[4] == "0" || !strings.HasPrefix(f[5], "/") || seen[f[5]] {
			continue
		}
		seen[f[5]] = true
		files = append(files, f[5])
	}
	if len(files) == 0 {
		return nil, errors.New("/proc/self/maps: no file mapped")
	}
	return files, nil
}

// addFileRule grants rights on one file, opened through any link.
func addFileRule(ruleset int, path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("grant %s: %w", path, errno)
	}
	return nil
}
