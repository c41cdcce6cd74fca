package cmd

import (
	"errors"
	"testing"
)

// --arg (or Prodigy's --args) sets ARG once; given twice, or with a
// different --set ARG=, it is a usage error.
func TestSetArg(t *testing.T) {
	tests := []struct {
		set  map[string]string
		args []string
		want string // ARG afterwards; "" for a usage error
	}{
		{map[string]string{}, []string{"spec-01"}, "spec-01"},
		{map[string]string{"ARG": "spec-01"}, []string{"spec-01"}, "spec-01"},
		{map[string]string{"ARG": "x"}, nil, "x"},
		{map[string]string{"ARG": "x"}, []string{"spec-01"}, ""},
		{map[string]string{}, []string{"a", "b"}, ""},
	}
	for _, tt := range tests {
		err := setArg(tt.set, tt.args)
		if tt.want == "" {
			if !errors.As(err, new(usageError)) {
				t.Errorf("setArg(%v, %v) = %v, want a usage error", tt.set, tt.args, err)
			}
			continue
		}
		if err != nil || tt.set["ARG"] != tt.want {
			t.Errorf("setArg(..., %v) = %v, ARG %q; want %q", tt.args, err, tt.set["ARG"], tt.want)
		}
	}
}
