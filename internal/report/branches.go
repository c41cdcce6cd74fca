package report

// branchesView is the git side of a job that ran on a job branch: where
// its work is, and the command that merges it when it is not merged.
type branchesView struct {
	Job    string
	State  string // merged, not merged, gone, or unknown (and why)
	Merge  string // the command that merges the job branch; "" when nothing is to merge
	Where  string // where to run Merge
	Items  []string
	Resume string // runner's own way to merge it
}

func newBranchesView(b *Branches, id string) *branchesView {
	if b == nil {
		return nil
	}
	v := &branchesView{Job: b.Job, Items: b.Items}
	into := b.Target
	if into == "" {
		into = "your branch (HEAD was detached when the job started)"
	}
	switch {
	case b.Unknown != "":
		v.State = "not read: " + b.Unknown
	case b.Gone:
		v.State = "gone from the repository"
		return v
	case b.Merged:
		v.State = "merged into " + into
		return v
	default:
		v.State = "not merged into " + into
	}
	v.Merge = "git merge --no-ff " + b.Job
	v.Where = "in your checkout on " + into
	if b.Target != "" {
		v.Resume = "runner resume --merge " + id
	}
	return v
}
