package cmd

import (
	"fmt"
	"testing"
	"time"

	"github.com/runnerdev/runner/eventlog"
)

// appendEventLine lays a line out as the "%s  %-18s %s\n" it replaced did:
// the type padded to 18 characters (not bytes), a longer one not cut.
func TestAppendEventLinePadsTheTypeAsFmt(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	for _, typ := range []string{"", "a", "item_succeeded", "dlq_retry_finished", "a_type_longer_than_eighteen", "événement_spécial"} {
		e := eventlog.Event{Time: at, Type: eventlog.Type(typ), Fields: map[string]any{"n": 1}}
		want := fmt.Sprintf("%s  %-18s %s\n", at.Local().Format(time.DateTime+".000"), typ, describeEvent(e))
		if got := string(appendEventLine([]byte("kept"), e)); got != "kept"+want {
			t.Errorf("got  %q\nwant %q", got, "kept"+want)
		}
	}
}
