// Package executor runs one step of a workflow: its condition, its command
// attempts under retry_config and circuit breaker, the agent program of a
// claude: step, the file of a write_file: step, foreach loops, git commits,
// captures and outputs, validate checks and handlers, emitting events as it
// goes.
//
// An Executor holds what the steps of a job share: its environment and
// secrets, live output, event sink, seed and agent program (ResolveAgent).
// A Run is one execution's context: the Scope of variables the step reads
// and sets, its directory, and for a map item its id, slot and checkpoints.
// RunStep returns a StepResult, which says whether the workflow stops and
// is the step's checkpoint (Record) for resume:
//
//	x := &executor.Executor{JobID: id, Emit: emit, Env: os.Environ(), Stdout: os.Stdout, Stderr: os.Stderr}
//	sc := executor.NewScope(vars, os.Environ())
//	for _, step := range wf.Steps {
//		if res := x.RunStep(ctx, step, executor.Run{Scope: sc}); res.Fatal() {
//			return res.Err
//		}
//	}
//
// A Scope's computed variables (${file:PATH}, ${cmd:COMMAND}, ${date:FORMAT}
// ...) are worked out when a template reads them. Stream runs a command that
// is not a step: the map phase's input command.
package executor
