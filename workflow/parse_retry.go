package workflow

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/retryv2"
)

var (
	// delayKeys shape a backoff schedule (error_policy.retry_config takes only these).
	delayKeys = []string{"attempts", "max_attempts", "backoff", "initial_delay", "max_delay", "jitter", "jitter_factor"}
	// policyKeys are the keys of one command-level retry policy.
	policyKeys = append(delayKeys[:len(delayKeys):len(delayKeys)], "retry_on", "retry_budget", "retry_after", "on_failure")
)

// retryConfig reads retry_config: one policy, or a list of policies. It
// also returns the on_failure action written in it, if any.
func (d *decoder) retryConfig(n *yaml.Node) ([]retryv2.Policy, *Failure) {
	r := d.resolve(n)
	if r == nil {
		return nil, nil
	}
	if r.Kind != yaml.SequenceNode {
		p, fl := d.policy(r, "retry_config", policyKeys)
		return []retryv2.Policy{p}, fl
	}
	if len(r.Content) == 0 {
		d.errorf(r, "retry_config is an empty list: give at least one policy")
		return nil, nil
	}
	var (
		policies []retryv2.Policy
		failure  *Failure
	)
	for i, it := range r.Content {
		p, fl := d.policy(it, fmt.Sprintf("retry_config[%d]", i), policyKeys)
		policies = append(policies, p)
		if fl != nil && failure != nil {
			d.errorf(it, "retry_config[%d]: on_failure is already set by an earlier policy; a step has one", i)
		} else if fl != nil {
			failure = fl
		}
	}
	return policies, failure
}

// policy reads one retry policy mapping, allowing the given keys.
func (d *decoder) policy(n *yaml.Node, what string, keys []string) (retryv2.Policy, *Failure) {
	p := retryv2.DefaultPolicy()
	f := d.mapping(n, what, keys)
	if f == nil {
		return p, nil
	}
	if v := d.oneOf(f, "attempts", "max_attempts"); v != nil {
		if a, ok := d.scalarInt(v); ok && a < 1 {
			d.errorf(v, "%s.attempts must be at least 1: it counts every run including the first (1 = run once, no retry), not %d", what, a)
		} else if ok {
			p.Attempts = a
		}
	}
	if v := f.get("backoff"); v != nil {
		p.Backoff = d.backoff(v, what+".backoff")
	}
	if v := f.get("initial_delay"); v != nil {
		p.InitialDelay, _ = d.duration(v, what+".initial_delay")
	}
	if v := f.get("max_delay"); v != nil {
		p.MaxDelay, _ = d.duration(v, what+".max_delay")
	}
	if v := f.get("jitter"); v != nil {
		p.Jitter = d.jitter(v, what+".jitter")
	}
	if v := f.get("jitter_factor"); v != nil {
		p.JitterFactor, _ = d.number(v, what+".jitter_factor", 0, 1)
	}
	if v := f.get("retry_on"); v != nil {
		p.RetryOn = d.matchers(v, what+".retry_on")
	}
	if v := f.get("retry_budget"); v != nil {
		p.Budget, _ = d.positive(v, what+".retry_budget")
	}
	if v := f.get("retry_after"); v != nil {
		p.RetryAfter, _ = d.boolean(v, what+".retry_after")
	}
	var fl *Failure
	if v := f.get("on_failure"); v != nil {
		fl = d.retryOnFailure(v, what+".on_failure")
	}
	return p, fl
}

// scalarInt reads a whole number of any sign.
func (d *decoder) scalarInt(n *yaml.Node) (int, bool) {
	n = d.scalar(n, "attempts", "a whole number")
	var v int
	if n == nil || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		if n != nil {
			d.errorf(n, "attempts must be a whole number, not %s", describe(n))
		}
		return 0, false
	}
	return v, true
}

// backoff reads a strategy name or its map form ({exponential: {base: 1.5}},
// {linear: {increment: 2s}}, {custom: {delays: [1s, 5s]}}).
func (d *decoder) backoff(n *yaml.Node, what string) retryv2.Backoff {
	b := retryv2.Backoff{Strategy: retryv2.Exponential, Base: retryv2.DefaultBase}
	r := d.resolve(n)
	if r == nil {
		return b
	}
	if r.Kind == yaml.ScalarNode {
		s, ok := d.enum(r, what, strategyNames...)
		if ok && s == string(retryv2.Custom) {
			d.errorf(r, "%s: custom needs its delays: {custom: {delays: [1s, 5s, 30s]}}", what)
		} else if ok {
			b.Strategy = retryv2.Strategy(s)
		}
		return b
	}
	f := d.choice(r, what, strategyNames)
	if f == nil || f.unknown > 0 {
		return b
	}
	if len(f.keys) != 1 {
		d.errorf(r, "%s must name one strategy, such as {exponential: {base: 2}}", what)
		return b
	}
	for name := range f.keys {
		b.Strategy = retryv2.Strategy(name)
		params := f.get(name)
		sub := what + "." + name
		switch b.Strategy {
		case retryv2.Exponential:
			if pf := d.mapping(orEmpty(params), sub, []string{"base"}); pf.get("base") != nil {
				b.Base, _ = d.number(pf.get("base"), sub+".base", 1, 1e6)
			}
		case retryv2.Linear:
			if pf := d.mapping(orEmpty(params), sub, []string{"increment"}); pf.get("increment") != nil {
				b.Increment, _ = d.duration(pf.get("increment"), sub+".increment")
			}
		case retryv2.Custom:
			pf := d.mapping(orEmpty(params), sub, []string{"delays"})
			if pf.get("delays") == nil {
				d.errorf(r, "%s needs delays: [1s, 5s, 30s]", sub)
				continue
			}
			items, ok := d.list(pf.get("delays"), sub+".delays")
			if ok && len(items) == 0 {
				d.errorf(r, "%s.delays must list at least one delay", sub)
			}
			for i, it := range items {
				if dl, ok := d.duration(it, fmt.Sprintf("%s.delays[%d]", sub, i)); ok {
					b.Delays = append(b.Delays, dl)
				}
			}
		case retryv2.Fixed, retryv2.Fibonacci:
			d.mapping(orEmpty(params), sub, nil) // no parameters
		}
	}
	return b
}

// orEmpty stands in an empty mapping for an absent value.
func orEmpty(n *yaml.Node) *yaml.Node {
	if n == nil {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	return n
}

// jitter reads true, false or "full".
func (d *decoder) jitter(n *yaml.Node, what string) retryv2.JitterMode {
	r := d.resolve(n)
	if r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() == "!!bool" {
		if on, _ := d.boolean(r, what); on {
			return retryv2.ProportionalJitter
		}
		return retryv2.NoJitter
	}
	if r != nil && r.Kind == yaml.ScalarNode && r.Value == "full" {
		return retryv2.FullJitter
	}
	if r != nil {
		d.errorf(r, "%s must be true, false or full, not %s", what, describe(r))
	}
	return retryv2.NoJitter
}

var (
	// strategyNames are the backoff names, written once in retryv2.Strategies.
	strategyNames = names(retryv2.Strategies)
	// builtinMatchers are the retry_on names, written once in retryv2.BuiltinMatchers.
	builtinMatchers = names(retryv2.BuiltinMatchers)
)

// names converts a list of kinds to the strings the parser accepts.
func names[S ~string](kinds []S) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

// matchers reads retry_on: built-in names and {pattern}, {exit_codes},
// {when} forms.
func (d *decoder) matchers(n *yaml.Node, what string) []retryv2.Matcher {
	items, ok := d.list(n, what)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(n, "%s is empty: no failure would be retried (leave it out to retry every failure)", what)
	}
	var out []retryv2.Matcher
	for i, it := range items {
		item := fmt.Sprintf("%s[%d]", what, i)
		r := d.resolve(it)
		if r == nil {
			continue
		}
		if r.Kind == yaml.ScalarNode {
			if name, ok := d.enum(r, item, builtinMatchers...); ok {
				out = append(out, retryv2.Matcher{Kind: retryv2.MatcherKind(name), Source: name})
			}
			continue
		}
		f := d.mapping(r, item, []string{"pattern", "exit_codes", "when"})
		if f == nil {
			continue
		}
		if len(f.keys) != 1 {
			d.errorf(r, "%s must have exactly one of pattern, exit_codes, when", item)
			continue
		}
		if name, empty := onlyKeyIsNull(f); empty {
			d.errorf(f.key(name), "%s.%s needs a value", item, name)
			continue
		}
		if m, ok := d.matcher(f, item); ok {
			out = append(out, m)
		}
	}
	return out
}

// onlyKeyIsNull returns the one key of f and whether its value is null or
// missing (`{pattern}`, `{when: }`).
func onlyKeyIsNull(f *fields) (string, bool) {
	for name := range f.keys {
		return name, f.get(name) == nil
	}
	return "", false
}

// matcher reads one mapping-form matcher.
func (d *decoder) matcher(f *fields, what string) (retryv2.Matcher, bool) {
	switch {
	case f.has("pattern"):
		src, ok := d.str(f.get("pattern"), what+".pattern")
		if !ok {
			return retryv2.Matcher{}, false
		}
		re, err := regexp.Compile(src)
		if err != nil {
			d.errorf(f.get("pattern"), "%s.pattern: invalid regular expression: %v", what, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			return retryv2.Matcher{}, false
		}
		return retryv2.Matcher{Kind: retryv2.MatchPattern, Pattern: re, Source: `pattern "` + src + `"`}, true
	case f.has("exit_codes"):
		v := f.get("exit_codes")
		if r := d.resolve(v); r != nil && r.Kind == yaml.ScalarNode {
			v = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{r}, Line: r.Line, Column: r.Column}
		}
		items, ok := d.list(v, what+".exit_codes")
		if !ok || len(items) == 0 {
			if ok {
				d.errorf(f.key("exit_codes"), "%s.exit_codes must list at least one exit code", what)
			}
			return retryv2.Matcher{}, false
		}
		m := retryv2.Matcher{Kind: retryv2.MatchExitCodes}
		for i, it := range items {
			if c, ok := d.integer(it, fmt.Sprintf("%s.exit_codes[%d]", what, i), 0); ok {
				m.ExitCodes = append(m.ExitCodes, c)
			}
		}
		m.Source = "exit_codes " + strings.Join(strings.Fields(fmt.Sprint(m.ExitCodes)), ", ")
		return m, true
	}
	e := d.compileExpr(f.get("when"), what+".when", outcomeEnv)
	if e == nil {
		return retryv2.Matcher{}, false
	}
	return retryv2.Matcher{Kind: retryv2.MatchWhen, When: e.Program, Source: `when "` + e.Source + `"`}, true
}

// retryOnFailure reads retry_config.on_failure: stop, continue or
// {fallback: {command: CMD}}.
func (d *decoder) retryOnFailure(n *yaml.Node, what string) *Failure {
	r := d.resolve(n)
	if r == nil {
		return nil
	}
	if r.Kind == yaml.ScalarNode {
		switch s, _ := d.enum(r, what, "stop", "continue", "fallback"); s {
		case "stop":
			return &Failure{Action: FailStop}
		case "continue":
			return &Failure{Action: FailContinue}
		case "fallback":
			d.errorf(r, "%s: fallback needs a command: {fallback: {command: ./save-locally.sh}}", what)
		}
		return nil
	}
	f := d.mapping(r, what, []string{"fallback"})
	if f == nil {
		return nil
	}
	if !f.has("fallback") {
		d.errorf(r, "%s must be stop, continue or {fallback: {command: ...}}", what)
		return nil
	}
	ff := d.mapping(orEmpty(f.get("fallback")), what+".fallback", []string{"command"})
	cmd := ff.get("command")
	if cmd == nil {
		d.errorf(f.key("fallback"), "%s.fallback needs a command", what)
		return nil
	}
	text, ok := d.str(cmd, what+".fallback.command")
	if !ok {
		return nil
	}
	if strings.TrimSpace(text) == "" {
		d.errorf(cmd, "%s.fallback.command is empty", what)
		return nil
	}
	return &Failure{Action: FailFallback, Commands: []Command{d.command(cmd, what+".fallback.command", text, ShellCommand)}}
}
