// Package workflow is the workflow file format: its types, strict positioned
// parsing and validation, the JSON schema, and compiled expressions.
//
// Parse (or Load, from a path) reads a YAML file into a Workflow: a
// standard workflow's Steps, or a MapReduce workflow's Setup, Map phase and
// Reduce; its environment, secrets and profiles; the error policy and the
// merge of a job branch. Each Step holds its Command (shell, claude,
// write_file or foreach), its retry policies (package retryv2), its
// handlers and its When (an Expr, compiled by package condition) and
// templates (package interp). Parse reports every problem at once, as
// ParseErrors at their line and column, an unknown key with a
// did-you-mean (Suggest); Warnings are problems that do not stop a file:
//
//	wf, err := workflow.Parse("release.yml", src)
//	if err != nil {
//		return err // release.yml:3:5: unknown key "shel" in step commands[0] (did you mean "shell"?)
//	}
//	for step := range workflow.AllSteps(wf.PhaseSteps()) { ... }
//
// Schema is the format's JSON schema, for editors.
package workflow
