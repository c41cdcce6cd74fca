package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runnerdev/runner/workflow/interp"
	"gopkg.in/yaml.v3"
)

// namespaceNames are the names runner defines in the namespaces whose
// every name it knows: a ${NS.NAME} with another NAME is an error at
// validation, never a "Bad substitution" when the step runs. ${item.*}
// (any field of an item), ${steps.*} (checked with the steps) and
// ${validation.*} (any field the check wrote) are open.
var namespaceNames = map[string][]string{
	"map": {"total", "successful", "failed", "skipped", "results", "results_file"},
	"merge": {"worktree", "worktree_path", "source_branch", "target_branch", "session_id",
		"commits", "commit_count", "modified_files", "file_count", "file_list", "commit_ids"},
	"worktree": {"path", "branch"},
	"shell":    {"output", "stdout", "stderr", "exit_code"}, // the last three in on_failure handlers
	"claude":   {"output"},
	"last":     {"output", "exit_code"},
	"error":    {"message", "exit_code", "step"},
	"workflow": append([]string{"name", "id"}, gitContextNames...),
	"step":     append([]string{"name", "index"}, gitContextNames...),
}

// isResults reports whether name, in ${map.NAME}, is the map's results.
func isResults(name string) bool { return name == "results" || name == "results_file" }

// gitContextNames are the git-context variables of ${workflow.*} and
// ${step.*} (Prodigy's GitChangeTracker).
var gitContextNames = []string{"commits", "commit_count", "files_changed", "files_added", "files_modified", "files_deleted", "insertions", "deletions"}

// nsRef is a read of ${NS.NAME} in one of runner's namespaces, checked
// once the workflow's mode and setup are known.
type nsRef struct {
	pos       Pos
	what      string
	path      string
	ns, name  string
	inForeach bool // in a foreach's do steps, which define ${item}
}

// noteNamespaceRefs records the reads of paths in runner's namespaces.
func (d *decoder) noteNamespaceRefs(n *yaml.Node, what string, paths []string) {
	for _, p := range paths {
		if _, _, ok := interp.Computed(p); ok {
			continue
		}
		ns, rest, _ := strings.Cut(p, ".")
		if i := strings.IndexByte(ns, '['); i >= 0 {
			ns = ns[:i]
		}
		name := rest
		if i := strings.IndexAny(rest, ".["); i >= 0 {
			name = rest[:i]
		}
		if _, closed := namespaceNames[ns]; closed && name != "" || ns == "item" || ns == "setup" {
			d.nsRefs = append(d.nsRefs, nsRef{pos: d.refPos(n, p), what: what, path: p, ns: ns, name: name, inForeach: d.doOf != nil})
		}
	}
}

// checkNamespaceRefs reports the reads of names runner does not define:
// an unknown name in a closed namespace, ${item...} in a standard
// workflow outside a foreach, ${setup.NAME} that no setup step captures.
func (d *decoder) checkNamespaceRefs(wf *Workflow) {
	setup := setupCaptures(wf)
	wf.GitContext, wf.ReadsResults = d.readsGitContext, d.readsResults
	for _, r := range d.nsRefs {
		if r.ns == "map" && isResults(r.name) {
			wf.ReadsResults = true
		}
		if (r.ns == "workflow" || r.ns == "step") && slices.Contains(gitContextNames, r.name) {
			wf.GitContext = true
		}
		switch {
		case r.ns == "item" && wf.Mode == Standard && !r.inForeach:
			d.errorAt(r.pos, "%s: ${%s}: a standard workflow has no items (${item} is set in a MapReduce agent_template and in a foreach's do steps)", r.what, r.path)
		case r.ns == "setup" && wf.Mode == Standard:
			d.errorAt(r.pos, "%s: ${%s}: a standard workflow has no setup phase (${setup.NAME} reads a MapReduce setup's capture)", r.what, r.path)
		case r.ns == "setup" && r.name != "" && !slices.Contains(setup, r.name):
			d.unknownName(r, setup, "no setup step captures "+r.name)
		case r.ns != "item" && r.ns != "setup" && !slices.Contains(namespaceNames[r.ns], r.name):
			d.unknownName(r, namespaceNames[r.ns], fmt.Sprintf("runner defines no %s.%s", r.ns, r.name))
		}
	}
}

// unknownName reports a read of a name that names does not hold.
func (d *decoder) unknownName(r nsRef, names []string, why string) {
	msg := fmt.Sprintf("%s: ${%s}: %s", r.what, r.path, why)
	if s := nearest(r.name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %s.%s?)", r.ns, s)
	}
	if len(names) > 0 {
		msg += fmt.Sprintf("; %s has %s", r.ns, strings.Join(names, ", "))
	}
	d.errorAt(r.pos, "%s", msg)
}

// setupCaptures are the names a MapReduce setup's steps capture.
func setupCaptures(wf *Workflow) []string {
	var names []string
	for s := range AllSteps(wf.Setup) {
		if s.Capture != "" && !strings.Contains(s.Capture, ".") {
			names = append(names, s.Capture)
		}
	}
	return names
}
