package dlq

import (
	"strings"
	"testing"
)

// A filter reads an item's fields and its last failure's; a misspelt
// field is an error when it is compiled, naming the fields there are.
func TestCompileFilter(t *testing.T) {
	it := Item{ItemID: "a", Item: []byte(`{"size":3}`), FailureCount: 2,
		Failures: []Failure{{Kind: "timeout", ExitCode: 124}, {Kind: "exit", ExitCode: 2, Step: "resize"}}}
	for src, want := range map[string]bool{
		"":                                    true,
		`kind == "exit" && exit_code == 2`:    true,
		`kind == "timeout"`:                   false, // only the last failure counts
		`item.size > 2 && failure_count == 2`: true,
		`step == "upload"`:                    false,
	} {
		f, err := CompileFilter(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got, err := f(it); err != nil || got != want {
			t.Errorf("%q = %v, %v; want %v", src, got, err, want)
		}
	}
	_, err := CompileFilter("exitcode == 2")
	if err == nil || !strings.Contains(err.Error(), "unknown name exitcode") || !strings.Contains(err.Error(), "exit_code") {
		t.Errorf("misspelt field: %v", err)
	}
}
