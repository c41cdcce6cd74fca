package workflow

import (
	"bufio"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/runnerdev/runner/workflow/interp"
	"gopkg.in/yaml.v3"
)

// A ${NAME} that nothing defines expands to what the environment holds,
// usually nothing, and a command such as rm -rf ${BUILD_DIRR}/cache then
// runs on the wrong path. When NAME is one edit away from a name the
// workflow defines, validation warns with the name it probably meant.

// plainRef is a read of ${NAME}, a name in no namespace.
type plainRef struct {
	pos  Pos
	name string
	at   stepAt // where it is read
}

// runnerEnvNames are the variables runner itself gives steps: defined
// though no workflow names them.
var runnerEnvNames = []string{
	"item", "item_id", "item_index", "item_json", "item_total", "index", "total", "uuid",
	"RUNNER_JOB_ID", "RUNNER_STEP", "RUNNER_ATTEMPT", "RUNNER_ITEM_ID", "RUNNER_ITEM_INDEX", "RUNNER_ITEM_JSON",
	"RUNNER_WORKTREE", "RUNNER_RETRY_AFTER_FILE", "PRODIGY_AUTOMATION", "ARG",
}

// notePlainRefs records the ${NAME} reads of t, but for names the text
// itself assigns (NAME=..., for NAME in): the shell's own.
func (d *decoder) notePlainRefs(n *yaml.Node, t *interp.Template) {
	text := t.String()
	for _, p := range t.Refs() {
		if strings.ContainsAny(p, ".[:") || !strings.Contains(text, "${"+p) ||
			strings.Contains(text, p+"=") || strings.Contains(text, "for "+p+" ") || strings.Contains(text, "read "+p) {
			continue
		}
		d.plainRefs = append(d.plainRefs, plainRef{pos: d.refPos(n, p), name: p, at: d.at})
	}
}

// checkNearNames warns of each ${NAME} the workflow, its env files and
// its profiles do not define, that the environment does not hold either,
// and that is one edit away from a name they define.
func (d *decoder) checkNearNames(wf *Workflow) {
	if len(d.plainRefs) == 0 {
		return
	}
	defined := d.definedNames(wf)
	for _, r := range d.plainRefs {
		if slices.Contains(defined, r.name) || slices.Contains(runnerEnvNames, r.name) {
			continue
		}
		if _, ok := os.LookupEnv(r.name); ok {
			continue
		}
		for _, name := range defined {
			if len(r.name) >= 3 && editDistance(r.name, name) == 1 {
				d.warnAt(r.pos, "${%s} is not defined by the workflow, its env files or profiles, so it expands to nothing (did you mean ${%s}?)", r.name, name)
				break
			}
		}
	}
}

// definedNames are the names the workflow defines: env, secrets,
// profiles, env files, steps' env and captures.
func (d *decoder) definedNames(wf *Workflow) []string {
	var names []string
	addEnv := func(vars []EnvVar) {
		for _, e := range vars {
			names = append(names, e.Name)
		}
	}
	addEnv(wf.Env)
	for _, p := range wf.Profiles {
		addEnv(p.Env)
	}
	for _, s := range wf.SecretVars {
		names = append(names, s.Name)
	}
	names = append(names, wf.Secrets...)
	names = append(names, d.envFileNames(wf)...)
	for s := range allWorkflowSteps(wf) {
		addEnv(s.Env)
		if s.Capture != "" {
			names = append(names, s.Capture)
		}
	}
	return names
}

// allWorkflowSteps are the steps of every phase.
func allWorkflowSteps(wf *Workflow) iter.Seq[*Step] {
	phases := [][]*Step{wf.Steps, wf.Setup, wf.Reduce}
	if wf.Map != nil {
		phases = append(phases, wf.Map.Template)
	}
	if wf.Merge != nil {
		phases = append(phases, wf.Merge.Steps)
	}
	return func(yield func(*Step) bool) {
		for _, steps := range phases {
			for s := range AllSteps(steps) {
				if !yield(s) {
					return
				}
			}
		}
	}
}

var dotenvName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=`) })

// envFileNames are the names the workflow's env files define, for those
// that exist now (relative to the workflow file's directory).
func (d *decoder) envFileNames(wf *Workflow) []string {
	var names []string
	for _, f := range wf.EnvFiles {
		if f.Path == nil || len(f.Path.Refs()) > 0 {
			continue
		}
		path := f.Path.String()
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(d.file), path)
		}
		file, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			if m := dotenvName().FindStringSubmatch(sc.Text()); m != nil {
				names = append(names, m[1])
			}
		}
		file.Close()
	}
	return names
}
