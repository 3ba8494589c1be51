package upstream

// Launch is how a stdio server's child process is started: the command
// found for it (in the PATH it gets), its arguments, working directory
// and environment.
type Launch struct {
	// Name is the server's name in the configuration.
	Name string
	// Path is the executable, Args its arguments (without argv[0]).
	Path string
	Args []string
	// Dir is the configured working directory, "" for codecell's.
	Dir string
	// Env is the child's environment, NAME=value. A Confine function
	// reads it (to see the paths a server is configured with) and must
	// never move it into Args, where other processes can read it.
	Env []string
	// ConfigEnv are the entries of Env the server's configuration set
	// (its env, expanded), as opposed to those every child inherits
	// (DefaultEnvironment).
	ConfigEnv []string
}

// A Confine function turns the launch of a stdio server into the launch
// of a wrapper that confines the process (such as codecell's Landlock
// shim) and then executes the original Path with its Args, Env and Dir.
// It is called at every start of the server. An error keeps the server
// from starting: it is unavailable with the error as its reason.
type Confine func(Launch) (Launch, error)
