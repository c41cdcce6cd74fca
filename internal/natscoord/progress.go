package natscoord

import (
	"encoding/json"

	"github.com/nats-io/nats.go"

	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
	"github.com/runnerdev/runner/internal/natsconn"
)

// tracker hears how the runs of a job's tasks go, on runner.progress.J,
// and reports it to the job's Host as it comes (remote.Tracker): each
// step is saved before the worker starts the next, events are recorded
// while the task runs, the job's slot is given back during a step's
// delay.
type tracker struct {
	*remote.Tracker
	sub *nats.Subscription
}

// trackProgress subscribes to the progress of the tasks of the job of key,
// showing their output on live (nil: nowhere).
func trackProgress(conn *nats.Conn, key string, host itemtask.Host, live *itemtask.Live) (*tracker, error) {
	tr := &tracker{Tracker: remote.NewTracker(host, live)}
	sub, err := natsconn.ServeProgress(conn, key, tr.Receive)
	if err != nil {
		return nil, err
	}
	tr.sub = sub
	return tr, nil
}

// close stops hearing progress.
func (tr *tracker) close() { _ = tr.sub.Unsubscribe() }

// taskBody is the body of task's message, without its checkpoints when
// they would make it too large for NATS: its worker asks for them at its
// start.
func taskBody(task natsconn.Task) ([]byte, error) {
	body, err := json.Marshal(task)
	if err == nil && len(body) > natsconn.MaxTask && len(task.Checkpoints) > 0 {
		task.Checkpoints = nil
		body, err = json.Marshal(task)
	}
	return body, err
}
