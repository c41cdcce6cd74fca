// Package plan describes what a workflow would run without running it:
// its phases and steps, and the retry schedule each step's policies imply
// (`runner run --dry-run`).
//
// New turns a parsed workflow into a Plan: its Phases of Steps, each with
// what it runs, its timeout, its circuit Breaker and its retry Policies with
// the Delays they imply (those a run with the given seed waits, or ranges
// without one); for a MapReduce workflow its Map phase and ErrorPolicy; and
// the End of a job branch. A Plan is the document of
// `run --dry-run --output json` as it is, and WriteText prints it for people:
//
//	p := plan.New(wf, seed, executor.ResolveAgent(wf.Agent, os.Environ()))
//	err := p.WriteText(os.Stdout)
package plan
