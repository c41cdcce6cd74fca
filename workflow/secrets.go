package workflow

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"sync"
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

// maskWriter masks secrets in command output on its way to the terminal.
// It passes on whole lines (ended by \n or \r) so that a secret split
// across writes is still found; Flush passes on the rest when a command
// ends.
type maskWriter struct {
	mu   sync.Mutex
	w    io.Writer
	mask func(string) string
	buf  []byte
}

// maskOutput wraps w when there are secrets to mask.
func maskOutput(w io.Writer, mask func(string) string) io.Writer {
	if w == nil || mask == nil {
		return w
	}
	return &maskWriter{w: w, mask: mask}
}

func (m *maskWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.buf = append(m.buf, p...)
	end := bytes.LastIndexAny(m.buf, "\n\r") + 1
	if end == 0 {
		return len(p), nil
	}
	_, err := io.WriteString(m.w, m.mask(string(m.buf[:end])))
	m.buf = append(m.buf[:0], m.buf[end:]...)
	return len(p), err
}

// Flush passes on a last line without its newline.
func (m *maskWriter) Flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.buf) > 0 {
		io.WriteString(m.w, m.mask(string(m.buf)))
		m.buf = m.buf[:0]
	}
}

// flushOutput passes on what a command left unfinished in a masked writer.
func flushOutput(ws ...io.Writer) {
	for _, w := range ws {
		if f, ok := w.(interface{ Flush() }); ok {
			f.Flush()
		}
	}
}
