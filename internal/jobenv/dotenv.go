package jobenv

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

var dotenvName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// parseDotenv reads an env file: NAME=value lines (an export prefix
// allowed), # comments and blank lines skipped, name and value trimmed, a
// value in matching single or double quotes taken without them and as
// written inside (it may span lines). Errors name the line, never its
// text: the line may hold a secret.
func parseDotenv(data []byte) ([][2]string, error) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var out [][2]string
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		start := i + 1
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		switch {
		case !ok:
			return nil, fmt.Errorf("%d: want NAME=value", start)
		case !dotenvName().MatchString(name):
			return nil, fmt.Errorf("%d: %q is not a valid variable name", start, name)
		}
		value = strings.TrimSpace(value)
		if value == "" || (value[0] != '"' && value[0] != '\'') {
			out = append(out, [2]string{name, value})
			continue
		}
		q, other := value[:1], map[string]string{`"`: "'", "'": `"`}[value[:1]]
		if len(value) > 1 && strings.HasSuffix(value, other) && !strings.HasSuffix(value, q) {
			return nil, fmt.Errorf("%d: the value of %s opens with %s and ends with %s", start, name, q, other)
		}
		for len(value) < 2 || !strings.HasSuffix(value, q) {
			if i+1 == len(lines) {
				return nil, fmt.Errorf("%d: the value of %s opens with %s and is not closed", start, name, q)
			}
			i++
			value += "\n" + strings.TrimRight(lines[i], " \t")
		}
		out = append(out, [2]string{name, value[1 : len(value)-1]})
	}
	return out, nil
}
