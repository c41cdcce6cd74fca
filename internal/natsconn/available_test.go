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
