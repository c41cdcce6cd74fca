package proc

import (
	"path/filepath"
	"strings"
	"sync"
)

// shellWords are the first words that keep a command under sh: dash's
// builtins and reserved words. A builtin that also exists as a program
// behaves differently from it (echo -e, true --help, pwd in a symlinked
// directory, cd, exit), and sh runs a builtin in its own process anyway,
// so running the program directly would save nothing.
var shellWords = wordSet(
	// reserved words
	"!", "{", "}", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then", "until", "while", "[[", "]]", "function", "select",
	// dash's builtins (src/builtins.def)
	".", ":", "[", "alias", "bg", "break", "cd", "chdir", "command", "continue", "echo", "eval", "exec", "exit", "export",
	"false", "fc", "fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd", "read", "readonly", "return",
	"set", "shift", "test", "times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset", "wait",
)

func wordSet(words ...string) map[string]bool {
	set := make(map[string]bool, len(words))
	for _, w := range words {
		set[w] = true
	}
	return set
}

// Direct reports whether Run executes command itself rather than under
// /bin/sh: see [Words] for the rule. It is false everywhere when /bin/sh
// is not dash, whose behaviour the direct path reproduces.
func Direct(command string) bool {
	return shellIsDash() && Words(command) != nil
}

// Words returns the words of command when it is a plain list of words
// that sh would run as one external program, and nil otherwise: a
// command of at most 64 KiB whose words, separated by spaces and tabs,
// are made of letters, digits, the characters - _ . / , : + @ % = and
// single-quoted strings (in which every byte but ' and NUL stands for
// itself, as runner quotes the values it interpolates), and whose first
// word is not empty, no shell builtin or reserved word, and holds no =.
// Anything else (a double quote, a backslash, $, a glob, ~, a
// redirection, a pipe, a separator, a newline outside quotes, an
// assignment VAR=x before the program, a non-ASCII byte outside quotes,
// an empty command) needs the shell.
func Words(command string) []string {
	if len(command) > maxInlineScript {
		return nil
	}
	var (
		out    []string
		word   []byte
		inWord bool
	)
	for i := 0; i < len(command); i++ {
		switch c := command[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				out, word, inWord = append(out, string(word)), word[:0], false
			}
		case c == '\'':
			end := strings.IndexByte(command[i+1:], '\'')
			if end < 0 || strings.IndexByte(command[i+1:i+1+end], 0) >= 0 {
				return nil
			}
			word, inWord = append(word, command[i+1:i+1+end]...), true
			i += end + 1
		case plainByte(c):
			word, inWord = append(word, c), true
		default:
			return nil
		}
	}
	if inWord {
		out = append(out, string(word))
	}
	if len(out) == 0 || out[0] == "" || shellWords[out[0]] || strings.ContainsRune(out[0], '=') {
		return nil
	}
	return out
}

// plainByte says whether c means only itself to sh, unquoted in a word.
func plainByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-_./,:+@%=", c) >= 0
}

// shellIsDash says whether /bin/sh is dash, the shell whose way of
// running a program the direct path reproduces (its environment, its
// messages); with any other shell every command runs under it.
var shellIsDash = sync.OnceValue(func() bool {
	p, err := filepath.EvalSymlinks(shellPath)
	return err == nil && filepath.Base(p) == "dash"
})
