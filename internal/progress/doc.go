// Package progress shows a running job's live status on stderr, among
// commands' output and runner's own lines.
//
// A Display learns of the job from its events (Observe) and from what the
// workflow declares (SetSteps, SetBreaker, SetQueue for a NATS queue's
// workers). On a terminal it redraws one status line at the bottom and
// prints everything else above it; elsewhere it prints a timestamped
// progress line now and then while items run. Commands' output goes through
// its Stdout and Stderr writers, runner's own lines through Line:
//
//	d := progress.New(os.Stdout, os.Stderr, "auto", noColor, quiet)
//	defer d.Close()
//	d.SetSteps(steps) // each phase's step count, by phase name
//	d.Observe(event) // for each event the job emits
//	d.Line("step build failed", progress.Red)
package progress
