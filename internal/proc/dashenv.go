package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// dashTableSize is the number of chains in dash's table of variables
// (VTABSIZE in src/var.c).
const dashTableSize = 39

// dashOwnVariables are the variables dash defines before it reads its
// environment, in the order they head their chains (dash pushes each on
// the front of its chain, so the last of its table comes first).
var dashOwnVariables = []string{"OPTIND", "PS4", "PS2", "PS1", "PATH", "MAILPATH", "MAIL", "IFS"}

// dashEnv is the environment dash gives the programs it runs, when it
// starts with env in directory dir: it keeps only entries whose name is a
// valid variable name, the last of each name (at the first one's place),
// resets IFS and OPTIND and sets PPID when they are exported, sets and
// exports PWD (kept if it names dir, else the physical path), and lists
// them in the order of its table of variables: by chain, and within a
// chain its own variables first, then the others as they came.
func dashEnv(env []string, dir string) []string {
	var chains [dashTableSize][]string // names
	values := make(map[string]string, len(env)+1)
	exported := make(map[string]bool, len(env)+1)
	add := func(name string) {
		if _, ok := values[name]; !ok {
			h := dashHash(name)
			chains[h] = append(chains[h], name)
		}
	}
	for _, name := range dashOwnVariables {
		add(name)
		values[name] = ""
	}
	for _, kv := range env {
		name, value, ok := cutName(kv)
		if !ok {
			continue
		}
		add(name)
		values[name], exported[name] = value, true
	}
	values["IFS"], values["OPTIND"] = " \t\n", "1"
	values["PPID"] = strconv.Itoa(os.Getpid())
	add("PWD")
	values["PWD"], exported["PWD"] = dashPWD(values["PWD"], exported["PWD"], dir), true

	out := make([]string, 0, len(exported))
	for _, chain := range chains {
		for _, name := range chain {
			if exported[name] {
				out = append(out, name+"="+values[name])
			}
		}
	}
	return out
}

// dashHash is dash's hashvar: which chain holds a variable.
func dashHash(name string) int {
	h := uint(name[0]) << 4
	for i := 0; i < len(name); i++ {
		h += uint(name[i])
	}
	return int(h % dashTableSize)
}

// cutName splits an environment entry whose name dash accepts (a letter
// or _, then letters, digits and _) from its value.
func cutName(kv string) (name, value string, ok bool) {
	for i := 0; i < len(kv); i++ {
		c := kv[i]
		switch {
		case c == '=' && i > 0:
			return kv[:i], kv[i+1:], true
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// dashPWD is the PWD dash sets in dir: the inherited one when it is an
// absolute name of that directory, else the directory's physical path.
func dashPWD(inherited string, ok bool, dir string) string {
	cwd := dir
	if cwd == "" {
		cwd = "."
	}
	var here, there syscall.Stat_t
	if ok && filepath.IsAbs(inherited) && syscall.Stat(inherited, &there) == nil && syscall.Stat(cwd, &here) == nil &&
		here.Dev == there.Dev && here.Ino == there.Ino {
		return inherited
	}
	abs, err := filepath.Abs(cwd) // filepath.Abs asks getcwd(2), which gives the physical path
	if err != nil {
		return ""
	}
	if p, err := filepath.EvalSymlinks(abs); err == nil {
		return p
	}
	return abs
}
