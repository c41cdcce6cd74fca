package natsconn

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A request no server answers is made again (a cluster electing its
// leaders) within the time given; one a server refuses is not.
func TestWhileUnanswered(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name   string
		errs   []error // what the calls return, in turn; nil after them
		within time.Duration
		calls  int
		want   error
	}{
		{"answered at the third call", []error{nats.ErrNoResponders, jetstream.ErrNoStreamResponse}, time.Minute, 3, nil},
		{"refused", []error{refused, nil}, time.Minute, 1, refused},
		{"unanswered past the wait", []error{nats.ErrNoResponders, nil}, 0, 1, nats.ErrNoResponders},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := WhileUnanswered(t.Context(), tc.within, func() error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if !errors.Is(err, tc.want) || err == nil && tc.want != nil || calls != tc.calls {
				t.Errorf("WhileUnanswered = %v after %d calls, want %v after %d", err, calls, tc.want, tc.calls)
			}
		})
	}
}

// An outage is named by the first stream, in a fixed order, that does not
// answer once one did not: a server that goes down while the streams are
// asked in turn is named by the first of them, whichever was being asked;
// a single stream that does not answer, by itself.
func TestFirstUnansweredNamesTheFirstStreamDown(t *testing.T) {
	down := errors.New("down")
	for _, tc := range []struct {
		name     string
		answered int             // how many asks the server answers before it goes down; -1: it stays up
		lost     map[string]bool // streams that do not answer while the server is up
		want     string
	}{
		{"all up", -1, nil, ""},
		{"server down before the probe", 0, nil, TasksStream},
		{"server down after the tasks stream answered", 1, nil, TasksStream},
		{"server down after the results stream answered", 2, nil, TasksStream},
		{"the results stream's leader lost", -1, map[string]bool{ResultsStream: true}, ResultsStream},
		{"the jobs bucket's leader lost", -1, map[string]bool{jobsStream: true}, jobsStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asks := 0
			got, err := firstUnanswered(probed, func(name string) error {
				asks++
				if tc.answered >= 0 && asks > tc.answered || tc.lost[name] {
					return down
				}
				return nil
			})
			if got != tc.want || (err != nil) != (tc.want != "") {
				t.Errorf("firstUnanswered = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
