package natsconn

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/itemtask/remote"
)

// The NATS objects of SPEC §11.3.
const (
	TasksStream   = "RUNNER_TASKS"
	ResultsStream = "RUNNER_RESULTS"
	JobsBucket    = "RUNNER_JOBS"
)

// Headers of every message, and the protocol this runner speaks.
const (
	HeaderProto = "Runner-Proto"
	headerJob   = "Runner-Job"
	Proto       = "2" // 2: a task message carries a batch of tasks
)

// DefaultQueue is the worker pool a job's tasks go to unless it names one.
const DefaultQueue = "default"

// DefaultMaxDeliveries is how many times one attempt's task is delivered
// before the worker that receives it once more fails it as kind lost.
const DefaultMaxDeliveries = 4

// Sizes: the server's default max_payload is 1 MiB; a task leaves room for
// headers, a result is trimmed well below it.
const (
	MaxPayload    = 1 << 20
	MaxTask       = MaxPayload - 4<<10
	MaxResult     = 900 << 10
	MaxOutput     = 64 << 10
	MaxLogTail    = 256 << 10
	MaxSpec       = MaxPayload
	CallDeadline  = 5 * time.Second // any one call that waits for the server
	AckDeadline   = 2 * time.Second // a DoubleAck (§11.7: the reply may never come)
	duplicateSpan = 2 * time.Minute
)

var queueName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`) })

// CheckQueue refuses a queue name that cannot be a subject token.
func CheckQueue(q string) error {
	if !queueName().MatchString(q) {
		return fmt.Errorf("queue %q: use 1 to 32 letters, digits, '_' or '-'", q)
	}
	return nil
}

// NewJobKey is a new J (§11.3) for a job: 16 hex digits of SHA-256 of
// its id (which may hold '.', which subjects cannot) and random bytes,
// so that jobs of one id on one server (other state directories, or one
// deleted and run again) never share subjects or message ids.
func NewJobKey(jobID string) string {
	sum := sha256.Sum256([]byte(jobID + "\x00" + rand.Text()))
	return hex.EncodeToString(sum[:8])
}

// SubjectKey is J in a task's subject, runner.task.Q.J.<index>.
func SubjectKey(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 {
		return ""
	}
	return parts[3]
}

// TaskSubject is the subject of a task message, runner.task.Q.J.B: B
// names the batch of tasks it carries, one of its own for every message
// (see NewBatchName).
func TaskSubject(queue, key, batch string) string {
	return "runner.task." + queue + "." + key + "." + batch
}

// BatchName is B in a task message's subject and id: the coordinator's
// epoch and the number of the message in it, which no other message of
// the job has.
func BatchName(epoch int, n uint64) string {
	return strconv.Itoa(epoch) + "-" + strconv.FormatUint(n, 10)
}

func ResultSubject(key string, index int) string {
	return "runner.result." + key + "." + strconv.Itoa(index)
}

// JobResultsSubject matches the results of every item of job key.
func JobResultsSubject(key string) string { return "runner.result." + key + ".>" }

// JobTasksSubject matches the task messages of job key on queue.
func JobTasksSubject(queue, key string) string { return TaskSubject(queue, key, ">") }

func TaskMsgID(key, batch string) string { return "t." + key + "." + batch }

func ResultMsgID(key string, index, attempt, epoch int) string {
	return fmt.Sprintf("r.%s.%d.%d.%d", key, index, attempt, epoch)
}

// BeatSubject is where the workers running a job's tasks tell its
// coordinator so, on core NATS: runner.beat.J.
func BeatSubject(key string) string { return "runner.beat." + key }

func WorkersConsumer(queue string) string { return "workers_" + queue }
func JobConsumer(key string) string       { return "job_" + key }

// Batch is the body of a task message: the tasks of one or more items of
// a job, sent together. The worker that takes it runs them at once, each
// on a slot of its own, stores each one's result as it ends and
// acknowledges the message once, when all have theirs; delivered again
// (that worker was lost), its items whose results the coordinator no
// longer awaits are not run again (see AwaitedSubject).
type Batch struct {
	Tasks []Task `json:"tasks"`
}

// BatchBody joins the bodies of tasks (each a Task in JSON) into the body
// of one task message, a Batch.
func BatchBody(tasks [][]byte) []byte {
	return append(append([]byte(`{"tasks":[`), bytes.Join(tasks, []byte(","))...), "]}"...)
}

// BatchOverhead is what a task adds to the body of a batch besides its
// own: a comma, and the batch's braces counted once for all.
const BatchOverhead = len(`{"tasks":[]}`) + 1

// AwaitedSubject is where a worker that got a batch delivered again asks
// the job's coordinator, on core NATS, which of its items it still awaits
// (an Awaited request): the others' results are recorded, or no dispatch
// waits for them, and they are not run again. No answer (no coordinator
// runs the job now): the worker runs those whose results are not stored
// (a result it recorded is no longer in the stream: the coordinator
// that resumes the job drops it as a duplicate).
func AwaitedSubject(key string) string { return "runner.awaited." + key }

// Awaited is a worker's question about a batch's items, each by index,
// attempt and epoch, and the coordinator's answer: Awaited[i] says
// whether it still waits for the result of Items[i].
type Awaited struct {
	Items   []AwaitedItem `json:"items,omitempty"`
	Awaited []bool        `json:"awaited,omitempty"`
}

// AwaitedItem is one item of an Awaited question.
type AwaitedItem struct {
	Index   int `json:"index"`
	Attempt int `json:"attempt"`
	Epoch   int `json:"epoch"`
}

// Task is one item's task, in a Batch.
type Task struct {
	JobID         string          `json:"job_id"`
	Index         int             `json:"index"`
	ItemID        string          `json:"item_id"`
	Attempt       int             `json:"attempt"`
	Epoch         int             `json:"epoch"`
	Item          json.RawMessage `json:"item"`
	MaxDeliveries int             `json:"max_deliveries"`
	Total         int             `json:"total,omitempty"` // the job's items: ${item_total}
	// Tip is the commit the item's worktree starts from (map.isolation:
	// worktree): the job branch's tip when the task was sent.
	Tip string `json:"tip,omitempty"`
	// Checkpoints are the steps of the attempt saved when the task was
	// sent: the run goes on after them when its coordinator does not
	// answer its start.
	Checkpoints []itemtask.StepRecord `json:"checkpoints,omitempty"`
	// Sent counts the times the coordinator sent the task again, under a
	// message id of its own, because the server lost it.
	Sent int `json:"sent,omitempty"`
}

// Result is the body of a result message.
type Result struct {
	Index      int               `json:"index"`
	ItemID     string            `json:"item_id,omitempty"` // the task's; empty from an older worker
	Attempt    int               `json:"attempt"`
	Epoch      int               `json:"epoch"`
	Worker     string            `json:"worker"`
	Sent       int               `json:"sent,omitempty"` // the task's
	Delivery   int               `json:"delivery"`
	Failed     bool              `json:"failed,omitempty"`
	Failure    *itemtask.Failure `json:"failure,omitempty"`
	Output     string            `json:"output,omitempty"`
	DurationMS int64             `json:"duration_ms"`
	Events     []eventlog.Event  `json:"events,omitempty"`
	LogTail    string            `json:"log_tail,omitempty"`
	Git        *ItemGit          `json:"git,omitempty"` // map.isolation: worktree
	// LastStep is the checkpoint of the template's last step, which
	// travels with the result instead of before it (itemtask.Opened.Last).
	LastStep *itemtask.StepRecord `json:"last_step,omitempty"`
	// Usage is what the run's agents spent (itemtask.Outcome.Usage);
	// absent from an older worker's.
	Usage *eventlog.AgentUsage `json:"usage,omitempty"`
}

// RunID is the run that stored r.
func (r Result) RunID() remote.RunID {
	return remote.RunID{Epoch: r.Epoch, Sent: r.Sent, Delivery: r.Delivery}
}

// Trim keeps the result's body under maxResult: the log tail goes first
// (a line saying so stays: the item's log on the coordinator says why the
// attempt's output is not there), then the events' messages, then the
// events.
func (r *Result) Trim() ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil || len(data) <= MaxResult {
		return data, err
	}
	if r.LogTail != "" {
		r.LogTail = fmt.Sprintf("[runner: this attempt's output (its last %d bytes) left out: its result was too large to carry it]\n", len(r.LogTail))
	}
	if data, err = json.Marshal(r); err != nil || len(data) <= MaxResult {
		return data, err
	}
	for i, e := range r.Events {
		if _, ok := e.Fields["message"]; ok {
			r.Events[i] = e.Redacted(func(string) string { return "" })
		}
	}
	if data, err = json.Marshal(r); err != nil || len(data) <= MaxResult {
		return data, err
	}
	r.Events = nil
	return json.Marshal(r)
}

// Beat is the body of a worker's notice that it runs a task, published on
// core NATS (nothing stores it) when the run starts and after each
// heartbeat the server answers: the coordinator sees from it a task whose
// worker stopped answering, which waits for the server to deliver it
// again, and each delivery after the first. One lost only delays what
// the coordinator shows.
type Beat struct {
	Index     int    `json:"index"`
	Attempt   int    `json:"attempt"`
	Worker    string `json:"worker"`
	Delivery  int    `json:"delivery"`
	AckWaitMS int64  `json:"ack_wait_ms"`
}

// Spec is the job's entry in RUNNER_JOBS (§11.6): what a worker needs to
// run its items, and whether it is running.
type Spec struct {
	Proto         string          `json:"proto"`
	RunnerVersion string          `json:"runner_version"`
	JobID         string          `json:"job_id"`
	Queue         string          `json:"queue"`
	Seed          uint64          `json:"seed"`
	Status        string          `json:"status"`
	MaxDeliveries int             `json:"max_deliveries"`
	Job           json.RawMessage `json:"job"` // the job as a worker opens it (itemtask.Job.Portable)
	AgentTimeout  time.Duration   `json:"agent_timeout_ns,omitempty"`
	// Live asks the workers for their items' output as it comes
	// (remote.KindOutput): the coordinator shows it (runner run --tag).
	Live bool `json:"live,omitempty"`
}

// Job statuses in the spec.
const (
	StatusRunning     = "running"
	StatusInterrupted = "interrupted"
)

// NewMsg is a message to subj carrying body, with the protocol headers.
func NewMsg(subj, jobID string, body []byte) *nats.Msg {
	m := nats.NewMsg(subj)
	m.Header.Set(HeaderProto, Proto)
	m.Header.Set(headerJob, jobID)
	m.Data = body
	return m
}

// Publish publishes m with its message id until the server has stored it
// (a PubAck) or ctx ends: a lost or late PubAck is answered by publishing
// again under the same id, which the server's duplicate window drops.
func Publish(ctx context.Context, js jetstream.JetStream, m *nats.Msg, id string) error {
	tooLarge := func(err error) bool { return errors.Is(err, nats.ErrMaxPayload) }
	err := Retry(ctx, func(err error) bool { return !tooLarge(err) }, func() error {
		cctx, cancel := context.WithTimeout(ctx, CallDeadline)
		defer cancel()
		_, err := js.PublishMsg(cctx, m, jetstream.WithMsgID(id))
		return err
	})
	if err != nil && !tooLarge(err) {
		return fmt.Errorf("publishing %s: %w (last: %v)", m.Subject, context.Cause(ctx), err)
	}
	return err
}

// Ack acknowledges msg and waits for the server to confirm, at most
// ackDeadline: a server restarted after a kill -9 may have forgotten the
// delivery and never answer (§11.7).
func Ack(ctx context.Context, msg jetstream.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, AckDeadline)
	defer cancel()
	return msg.DoubleAck(ctx)
}

// AckElected is Ack that tries again, until ctx ends, while no server
// answers the acknowledgement (no responders): in a cluster, the
// consumer's leader was lost and another is being elected; acknowledged
// then, the task does not run again. A server that does not confirm is
// not waited for again, as in Ack.
func AckElected(ctx context.Context, msg jetstream.Msg) error {
	noResponders := func(err error) bool { return errors.Is(err, nats.ErrNoResponders) }
	return Retry(ctx, noResponders, func() error { return Ack(ctx, msg) })
}

// Next pulls one message from c, waiting at most 30 s (or until ctx's
// deadline); the server's heartbeats every 2 s tell a pull that a
// restarted server forgot (one shorter than 6 s has none: it ends soon
// anyway, and the client refuses heartbeats over half its wait). After an
// error other than an empty pull it pauses, as the client is reconnecting
// meanwhile.
func Next(ctx context.Context, c jetstream.Consumer) (jetstream.Msg, error) {
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := []jetstream.FetchOpt{jetstream.FetchContext(pctx)}
	if deadline, _ := pctx.Deadline(); time.Until(deadline) >= 6*time.Second {
		opts = append(opts, jetstream.FetchHeartbeat(2*time.Second))
	}
	msg, err := c.Next(opts...)
	if err != nil && pctx.Err() == nil && !errors.Is(err, nats.ErrTimeout) {
		sleep(ctx, 250*time.Millisecond)
	}
	return msg, err
}
