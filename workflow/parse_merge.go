package workflow

import "gopkg.in/yaml.v3"

// mergeKeys are the keys of merge:'s mapping form.
var mergeKeys = []string{"commands", "timeout"}

// mergeEnd reads merge: and merge_back:, the end of a job that runs on a
// job branch: both act on that branch, which a MapReduce job whose map
// runs without isolation does not have. A standard workflow gets one
// because of them (RunsInWorktree), and so does a map whose isolation the
// file does not set, as in Prodigy.
func (d *decoder) mergeEnd(f *fields, wf *Workflow) {
	if n := f.get("merge"); n != nil {
		wf.Merge = d.mergePhase(n)
	}
	if n := f.get("merge_back"); n != nil {
		wf.MergeBack, _ = d.boolean(n, "merge_back")
	}
	if wf.Map == nil || wf.Map.Isolation == IsolationWorktree {
		return
	}
	if !wf.Map.IsolationSet && (wf.Merge != nil || wf.MergeBack) {
		// Prodigy runs every map agent in a worktree, and its merge
		// workflow when it merges the job's: a map that says nothing of
		// its isolation does too.
		wf.Map.Isolation = IsolationWorktree
		return
	}
	if !wf.Map.IsolationSet {
		d.warnSharedCheckout(wf.Map.Template)
		return
	}
	const why = "%s acts on the job branch, which only a map with isolation: worktree has (this one runs with isolation: none); set map.isolation: worktree or remove %s"
	if wf.Merge != nil {
		d.errorf(f.key("merge"), why, "merge", "merge")
	}
	if wf.MergeBack {
		d.errorf(f.key("merge_back"), why, "merge_back: true", "it")
	}
}

// isolation reads a standard workflow's isolation: worktree runs its
// commands in a job worktree on the job branch, none in the checkout,
// which leaves no job branch for merge: or merge_back: to act on.
func (d *decoder) isolation(f *fields, wf *Workflow) {
	n := f.get("isolation")
	if n == nil {
		return
	}
	s, ok := d.enum(n, "isolation", string(IsolationNone), string(IsolationWorktree))
	if !ok {
		return
	}
	wf.Isolation = Isolation(s)
	if wf.Isolation == IsolationNone && (wf.Merge != nil || wf.MergeBack) {
		d.errorf(f.key("isolation"), "isolation: none runs the commands in your checkout, without the job branch that merge: and merge_back: act on; remove isolation: none or them")
	}
}

// mergePhase reads merge: Prodigy's merge workflow, a list of steps or
// {commands: [...], timeout: SECONDS}.
func (d *decoder) mergePhase(n *yaml.Node) *MergePhase {
	r := d.resolve(n)
	if r == nil {
		return nil
	}
	if r.Kind != yaml.MappingNode {
		return &MergePhase{Steps: d.stepList(n, "merge", true)}
	}
	f := d.mapping(r, "merge", mergeKeys)
	if f == nil {
		return nil
	}
	m := &MergePhase{}
	if c := f.get("commands"); c != nil {
		m.Steps = d.stepList(c, "merge.commands", true)
	} else {
		d.missing(f, r, "merge needs commands: a list of steps")
	}
	if t := f.get("timeout"); t != nil {
		m.Timeout, _ = d.positive(t, "merge.timeout")
	}
	return m
}
