package cmd

import (
	"runtime/debug"
	"testing"
)

// The commit a build recorded is shown beside the version, shortened,
// marked when the tree had changes (issue 25.5).
func TestBuildRevision(t *testing.T) {
	for _, tt := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, ""},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}, "0123456789ab"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}, "0123456789ab+changes"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, ""},
	} {
		if got := buildRevision(&debug.BuildInfo{Settings: tt.settings}); got != tt.want {
			t.Errorf("buildRevision(%v) = %q, want %q", tt.settings, got, tt.want)
		}
	}
	if got := buildRevision(nil); got != "" {
		t.Errorf("buildRevision(nil) = %q", got)
	}
}
