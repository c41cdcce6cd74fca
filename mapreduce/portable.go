package mapreduce

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/runnerdev/runner/internal/eventlog"
	"github.com/runnerdev/runner/internal/itemtask"
	"github.com/runnerdev/runner/internal/job"
	"github.com/runnerdev/runner/internal/state"
	"github.com/runnerdev/runner/workflow"
)

// OpenPortable opens, on the NATS worker named worker, a job from the
// portable form its coordinator sent (itemtask.Job.Portable) as a copy in
// dir, its steps' events going to emit, to run its items there. Its error
// says why this worker cannot run them: a secret the job needs that this
// environment lacks, an environment it cannot resolve, no map phase.
func OpenPortable(portable json.RawMessage, dir, worker string, emit func(eventlog.Event)) (itemtask.Opened, error) {
	var p job.Portable
	if err := json.Unmarshal(portable, &p); err != nil {
		return itemtask.Opened{}, fmt.Errorf("the job's portable form: %w", err)
	}
	if err := missingSecrets(p.Meta.Secrets, worker); err != nil {
		return itemtask.Opened{}, err
	}
	jw, err := job.OpenPortable(p, state.Store{Dir: dir}, job.Options{Stdout: io.Discard, Stderr: io.Discard}, emit)
	if err != nil {
		return itemtask.Opened{}, fmt.Errorf("worker %s cannot run job %s: %w", worker, p.Meta.ID, err)
	}
	wf := jw.Workflow()
	if wf.Mode != workflow.MapReduce || wf.Map == nil {
		return itemtask.Opened{}, fmt.Errorf("job %s has no map phase", p.Meta.ID)
	}
	// The secrets the file lists without a value are this environment's.
	if err := missingSecrets(wf.EnvSecrets, worker); err != nil {
		return itemtask.Opened{}, err
	}
	x := jw.Executor()
	x.Env = append(x.Env, "RUNNER_WORKER="+worker)
	return itemtask.Opened{Runner: NewRunner(x, jw.Scope(), wf.Map, jw.ItemLogPath, nil, nil), Mask: jw.Mask, LogPath: jw.ItemLogPath}, nil
}

// missingSecrets is an error naming the secrets among names that the
// environment of worker lacks.
func missingSecrets(names []string, worker string) error {
	var missing []string
	for _, name := range names {
		if _, ok := os.LookupEnv(name); !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("secret %s is not set on worker %s", strings.Join(missing, ", "), worker)
}
