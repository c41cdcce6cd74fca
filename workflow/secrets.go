package workflow

import (
	"slices"
	"strings"
)

// minSecretLen is the shortest value that is masked: shorter values would
// mask ordinary words and numbers everywhere.
const minSecretLen = 4

var secretNameParts = []string{"TOKEN", "SECRET", "PASSWORD", "KEY"}

// isSecretName reports whether an environment variable's value is masked.
func isSecretName(wf *Workflow, name string) bool {
	if slices.Contains(wf.Secrets, name) {
		return true
	}
	upper := strings.ToUpper(name)
	for _, p := range secretNameParts {
		if strings.Contains(upper, p) {
			return true
		}
	}
	return false
}

// secretMasker returns a function that replaces secret values with ***,
// or nil when there are none. Entries are KEY=VALUE.
func secretMasker(wf *Workflow, envs ...[]string) func(string) string {
	var pairs []string
	seen := map[string]bool{}
	for _, env := range envs {
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || len(v) < minSecretLen || seen[v] || !isSecretName(wf, k) {
				continue
			}
			seen[v] = true
			pairs = append(pairs, v, "***")
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}
