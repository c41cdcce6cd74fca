package workflow

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/theory/jsonpath"
	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/errorpolicy"
	"github.com/runnerdev/runner/internal/breaker"
	"github.com/runnerdev/runner/retryv2"
)

var (
	mapPhaseKeys = []string{
		"input", "json_path", "filter", "sort_by", "distinct", "offset", "max_items", "item_id",
		"max_parallel", "agent_timeout", "agent_timeout_secs", "timeout_config", "agent_template",
		"isolation", "merge",
	}
	errorPolicyKeys = []string{
		"on_item_failure", "continue_on_failure", "max_failures", "failure_threshold", "min_items",
		"error_collection", "circuit_breaker", "retry_config",
	}
)

// DefaultMaxParallel is map.max_parallel when the file gives none.
const DefaultMaxParallel = 10

// mapReduce reads setup, map, reduce and the error policy.
func (d *decoder) mapReduce(f *fields, wf *Workflow) {
	if n := f.get("setup"); n != nil {
		wf.Setup = d.setupPhase(n, wf)
	}
	if n := f.get("map"); n != nil {
		wf.Map = d.mapPhase(n)
	} else {
		d.missing(f, f.node, "a MapReduce workflow needs map: with input and agent_template")
	}
	if n := f.get("reduce"); n != nil {
		d.inReduce = true
		wf.Reduce = d.phase(n, "reduce", false)
		d.inReduce = false
	}
	ep := d.mapping(orEmpty(f.get("error_policy")), "error_policy", errorPolicyKeys)
	if ep == nil {
		return
	}
	// The same keys at the top level are Prodigy's shortcuts.
	for _, k := range errorPolicyKeys {
		if !f.has(k) {
			continue
		}
		if ep.has(k) {
			d.errorf(f.key(k), "%s is set both here and in error_policy; keep one", k)
			continue
		}
		ep.keys[k], ep.vals[k] = f.keys[k], f.vals[k]
	}
	wf.ErrorPolicy, wf.ItemRetry = d.errorPolicy(ep)
}

// phase reads setup or reduce: a list of steps, or Prodigy's {commands: [...]}.
func (d *decoder) phase(n *yaml.Node, what string, required bool) []*Step {
	if r := d.resolve(n); r != nil && r.Kind == yaml.MappingNode {
		f := d.mapping(r, what, []string{"commands"})
		if c := f.get("commands"); c != nil {
			return d.stepList(c, what+".commands", required)
		}
		d.missing(f, r, "%s needs commands: a list of steps", what)
		return nil
	}
	return d.stepList(n, what, required)
}

// mapPhase reads the map section.
func (d *decoder) mapPhase(n *yaml.Node) *MapPhase {
	f := d.mapping(n, "map", mapPhaseKeys)
	if f == nil {
		return nil
	}
	m := &MapPhase{Pos: pos(f.node), MaxParallel: strconv.Itoa(DefaultMaxParallel)}
	d.at = stepAt{phase: "map"}
	if v := f.get("input"); v != nil {
		if text, ok := d.str(v, "map.input"); ok && strings.TrimSpace(text) != "" {
			m.Input, m.InputPos = d.template(v, "map.input", text), pos(v)
		} else if ok {
			d.errorf(v, "map.input is empty: give a file or a command that prints the items")
		}
	} else {
		d.missing(f, f.node, "map needs input: a file, or a shell command that prints the items")
	}
	if v := f.get("json_path"); v != nil {
		m.JSONPath = d.jsonPath(v)
	}
	if v := f.get("filter"); v != nil {
		m.Filter = d.compileExpr(v, "map.filter", nil)
	}
	if v := f.get("sort_by"); v != nil {
		m.SortBy = d.sortBy(v)
	}
	if v := f.get("distinct"); v != nil {
		m.Distinct = d.fieldPath(v, "map.distinct")
	}
	if v := f.get("offset"); v != nil {
		m.Offset, _ = d.integer(v, "map.offset", 0)
	}
	if v := f.get("max_items"); v != nil {
		m.MaxItems, _ = d.integer(v, "map.max_items", 1)
	}
	if v := f.get("item_id"); v != nil {
		if text, ok := d.str(v, "map.item_id"); ok {
			m.ItemID = d.template(v, "map.item_id", text)
		}
	}
	if v := f.get("max_parallel"); v != nil {
		m.MaxParallel = d.maxParallel(v)
	}
	m.AgentTimeout, m.AgentTimeoutVar = d.agentTimeout(f)
	if v := f.get("agent_template"); v != nil {
		m.Template = d.phase(v, "agent_template", true)
	} else {
		d.missing(f, f.node, "map needs agent_template: the steps run for each item")
	}
	m.Isolation = defaultIsolation(m.Template)
	if v := f.get("isolation"); v != nil {
		if s, ok := d.enum(v, "map.isolation", string(IsolationNone), string(IsolationWorktree)); ok {
			m.Isolation, m.IsolationSet = Isolation(s), true
		}
	}
	if v := f.get("merge"); v != nil {
		s, ok := d.enum(v, "map.merge", "merge", "none")
		m.NoMerge = ok && s == "none"
	}
	return m
}

// jsonPath checks an RFC 9535 JSONPath query.
func (d *decoder) jsonPath(n *yaml.Node) string {
	q, ok := d.str(n, "map.json_path")
	if !ok || q == "" {
		return ""
	}
	if _, err := jsonpath.Parse(q); err != nil {
		d.errorf(n, "map.json_path: invalid JSONPath %q: %v", q, err)
		return ""
	}
	return q
}

var fieldPathRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(?:\[[0-9]+\]|\.[A-Za-z_][A-Za-z0-9_-]*)*$`)
})

// fieldPath reads a path into an item such as "size" or "meta.tags[0]".
func (d *decoder) fieldPath(n *yaml.Node, what string) string {
	s, ok := d.str(n, what)
	if !ok {
		return ""
	}
	if !fieldPathRE().MatchString(s) {
		d.errorf(n, "%s: %q is not a field path such as size or meta.tags[0]", what, s)
		return ""
	}
	return s
}

// sortBy reads "field [ASC|DESC] [NULLS FIRST|LAST], ...".
func (d *decoder) sortBy(n *yaml.Node) []SortKey {
	s, ok := d.str(n, "map.sort_by")
	if !ok {
		return nil
	}
	var keys []SortKey
	for _, part := range strings.Split(s, ",") {
		words := strings.Fields(part)
		if len(words) == 0 || !fieldPathRE().MatchString(words[0]) {
			d.errorf(n, "map.sort_by: %q is not FIELD [ASC|DESC] [NULLS FIRST|LAST]", strings.TrimSpace(part))
			return nil
		}
		k := SortKey{Field: words[0]}
		rest := strings.ToUpper(strings.Join(words[1:], " "))
		if dir, after, _ := strings.Cut(rest, " "); dir == "ASC" || dir == "DESC" {
			k.Desc, rest = dir == "DESC", after
		}
		switch rest {
		case "":
		case "NULLS FIRST":
			k.NullsFirst = true
		case "NULLS LAST":
		default:
			d.errorf(n, "map.sort_by: %q is not FIELD [ASC|DESC] [NULLS FIRST|LAST]", strings.TrimSpace(part))
			return nil
		}
		keys = append(keys, k)
	}
	return keys
}

var varRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})$`)
})

// maxParallel reads a number of agents, or "$VAR" resolved when the job starts.
func (d *decoder) maxParallel(n *yaml.Node) string {
	r := d.resolve(n)
	if r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() == "!!str" {
		if varRef().MatchString(r.Value) {
			return r.Value
		}
		if _, err := strconv.Atoi(r.Value); err != nil {
			d.errorf(r, "map.max_parallel must be a number or a variable such as $WORKERS, not %s", describe(r))
			return ""
		}
	}
	v, ok := d.integer(r, "map.max_parallel", 1)
	if !ok {
		return ""
	}
	return strconv.Itoa(v)
}

// agentTimeout reads agent_timeout and its Prodigy spellings; the first
// two may be a $VAR resolved when the job starts.
func (d *decoder) agentTimeout(f *fields) (time.Duration, *VarDuration) {
	var (
		t    time.Duration
		from string
		late *VarDuration
	)
	set := func(name string, v time.Duration, vd *VarDuration) {
		if from != "" {
			d.errorf(f.key(name), "map.%s and map.%s both set the agent timeout; keep one", from, name)
			return
		}
		t, late, from = v, vd, name
	}
	if v := f.get("agent_timeout"); v != nil {
		if vd := d.varDuration(v, "map.agent_timeout"); vd != nil {
			set("agent_timeout", 0, vd)
		} else if dur, ok := d.positive(v, "map.agent_timeout"); ok {
			set("agent_timeout", dur, nil)
		}
	}
	if v := f.get("agent_timeout_secs"); v != nil {
		if vd := d.varDuration(v, "map.agent_timeout_secs"); vd != nil {
			set("agent_timeout_secs", 0, vd)
		} else if secs, ok := d.integer(v, "map.agent_timeout_secs", 1); ok {
			set("agent_timeout_secs", time.Duration(secs)*time.Second, nil)
		}
	}
	if v := f.get("timeout_config"); v != nil {
		tc := d.mapping(v, "map.timeout_config", []string{"agent_timeout_secs"})
		if s := tc.get("agent_timeout_secs"); s != nil {
			if secs, ok := d.integer(s, "map.timeout_config.agent_timeout_secs", 1); ok {
				set("timeout_config", time.Duration(secs)*time.Second, nil)
			}
		}
	}
	return t, late
}

// errorPolicy reads the error policy fields (from error_policy and the
// top-level shortcuts).
func (d *decoder) errorPolicy(f *fields) (errorpolicy.Policy, *retryv2.Policy) {
	p := errorpolicy.Default()
	if v := f.get("on_item_failure"); v != nil {
		a, _ := d.enum(v, "on_item_failure", string(errorpolicy.DLQ), string(errorpolicy.Retry), string(errorpolicy.Skip), string(errorpolicy.Stop))
		if a != "" {
			p.OnItemFailure = errorpolicy.Action(a)
		}
	}
	if v := f.get("continue_on_failure"); v != nil {
		p.ContinueOnFailure, _ = d.boolean(v, "continue_on_failure")
	}
	if v := f.get("max_failures"); v != nil {
		p.MaxFailures, _ = d.integer(v, "max_failures", 1)
	}
	if v := f.get("failure_threshold"); v != nil {
		if r, ok := d.number(v, "failure_threshold", 0, 1); ok && r == 0 {
			d.errorf(v, "failure_threshold must be above 0 (a share of processed items, such as 0.25); to stop at the first failure use max_failures: 1")
		} else {
			p.FailureThreshold = r
		}
	}
	if v := f.get("min_items"); v != nil {
		p.MinItems, _ = d.integer(v, "min_items", 1)
	}
	if v := f.get("error_collection"); v != nil {
		p.Collection = d.collection(v)
	}
	if v := f.get("circuit_breaker"); v != nil {
		c := d.breakerFields(v, "circuit_breaker", breaker.Config{
			FailureThreshold: 5, SuccessThreshold: 3, Timeout: 30 * time.Second, HalfOpenRequests: 3,
		})
		p.Breaker = &c
	}
	var retry *retryv2.Policy
	if v := f.get("retry_config"); v != nil {
		rp, _ := d.policy(v, "error_policy.retry_config", delayKeys)
		retry = &rp
	} else if p.OnItemFailure == errorpolicy.Retry {
		rp := retryv2.DefaultPolicy()
		retry = &rp
	}
	return p, retry
}

// collection reads error_collection: aggregate, immediate or {batched:
// {size: N}} (or batched:N, {batched: N}).
func (d *decoder) collection(n *yaml.Node) errorpolicy.Collection {
	c := errorpolicy.Collection{Mode: "aggregate"}
	r := d.resolve(n)
	if short, ok := d.batchedShorthand(r); ok {
		return short
	}
	if r != nil && r.Kind == yaml.ScalarNode {
		switch s, _ := d.enum(r, "error_collection", "aggregate", "immediate", "batched"); s {
		case "batched":
			d.errorf(r, "error_collection: batched needs a size: batched:10, or {batched: {size: 10}}")
		case "":
		default:
			c.Mode = s
		}
		return c
	}
	f := d.mapping(r, "error_collection", []string{"batched"})
	if f == nil || !f.has("batched") {
		if f != nil {
			d.errorf(r, "error_collection must be aggregate, immediate or {batched: {size: N}}")
		}
		return c
	}
	bf := d.mapping(orEmpty(f.get("batched")), "error_collection.batched", []string{"size"})
	if s := bf.get("size"); s != nil {
		if size, ok := d.integer(s, "error_collection.batched.size", 1); ok {
			return errorpolicy.Collection{Mode: "batched", BatchSize: size}
		}
		return c
	}
	d.errorf(f.key("batched"), "error_collection.batched needs size: N")
	return c
}
