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

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/workflow/interp"
)

// A ${NAME} that nothing defines expands to what the environment holds,
// usually nothing, and a command such as rm -rf ${BUILD_DIRR}/cache then
// runs on the wrong path. When NAME is one edit away from a name the
// workflow defines, validation warns with the name it probably meant; a
// name a condition reads likewise. A value among the words of a shell
// for loop is one quoted word, the loop runs once: a warning too.

// plainRef is a read of ${NAME}, a name in no namespace, in a value or a
// condition.
type plainRef struct {
	pos     Pos
	name    string
	written string // ${NAME} in a value, NAME in a condition
	at      stepAt // where it is read
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
		d.plainRefs = append(d.plainRefs, plainRef{pos: d.refPos(n, p), name: p, written: "${" + p + "}", at: d.at})
	}
}

// noteExprNames records the plain names a condition reads (RESULT ==
// "ok", or Prodigy's ${RESULT} == "ok"), but the functions it calls.
func (d *decoder) noteExprNames(n *yaml.Node, prog *vm.Program) {
	root := prog.Node()
	called := map[ast.Node]bool{}
	ast.Walk(&root, nodeVisitor(func(node ast.Node) {
		if c, ok := node.(*ast.CallNode); ok {
			called[c.Callee] = true
		}
	}))
	ast.Walk(&root, nodeVisitor(func(node ast.Node) {
		if id, ok := node.(*ast.IdentifierNode); ok && !called[node] && !slices.Contains(interp.Namespaces, id.Value) && outcomeEnv[id.Value] == nil {
			d.plainRefs = append(d.plainRefs, plainRef{pos: d.scalarPos(n, max(strings.Index(n.Value, id.Value), 0)), name: id.Value, written: id.Value, at: d.at})
		}
	}))
}

// nodeVisitor calls itself with each node of an expression.
type nodeVisitor func(ast.Node)

func (v nodeVisitor) Visit(node *ast.Node) { v(*node) }

// checkNearNames warns of each ${NAME} the workflow, its env files and
// its profiles do not define, that the environment does not hold either,
// and that is one edit away from a name they define.
func (d *decoder) checkNearNames(wf *Workflow) {
	if len(d.plainRefs) == 0 && len(d.forWords) == 0 {
		return
	}
	defined := d.definedNames(wf)
	d.checkForWords(defined)
	for _, r := range d.plainRefs {
		if slices.Contains(defined, r.name) || slices.Contains(runnerEnvNames, r.name) {
			continue
		}
		if _, ok := os.LookupEnv(r.name); ok {
			continue
		}
		for _, name := range slices.Concat(defined, runnerEnvNames) {
			if len(r.name) >= 3 && oneEdit(r.name, name) {
				effect := "expands to nothing"
				if !strings.HasPrefix(r.written, "${") {
					effect = "is nil in the condition"
				}
				d.warnAt(r.pos, "%s is not defined by the workflow, its env files or profiles, so it %s (did you mean %s?)", r.written, effect, strings.Replace(r.written, r.name, name, 1))
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

// command reads the text of a command of the given kind.
func (d *decoder) command(n *yaml.Node, what, text string, kind CommandKind) Command {
	t := d.template(n, what, text)
	if t != nil && kind == ShellCommand {
		d.noteForWords(n, t)
	}
	return Command{Kind: kind, Text: t}
}

// forWord is a placeholder among the words of a shell for loop.
type forWord struct {
	pos Pos
	ref interp.Ref
}

// noteForWords records the placeholders of a shell command's text t that
// stand unquoted among the words of a for loop.
func (d *decoder) noteForWords(n *yaml.Node, t *interp.Template) {
	for _, r := range t.ForWords() {
		d.forWords = append(d.forWords, forWord{pos: d.scalarPos(n, max(strings.Index(n.Value, r.Src), 0)), ref: r})
	}
}

// checkForWords warns of each value runner inserts among the words of a
// for loop: escaped as one word, the loop runs once for it, where its
// author most likely meant one run per word. A plain name the workflow
// does not define is the shell's, which splits it.
func (d *decoder) checkForWords(defined []string) {
	for _, w := range d.forWords {
		if p := w.ref.Path; !strings.ContainsAny(p, ".[:") && !slices.Contains(defined, p) && !slices.Contains(runnerEnvNames, p) {
			continue
		}
		d.warnAt(w.pos, "%s is inserted as one word (runner quotes a value for the shell), so this for loop runs once with the whole value; to loop over its words write ${%s|raw}, unescaped, which the shell splits", w.ref.Src, w.ref.Path)
	}
}
