package workflow

import (
	"regexp"

	"gopkg.in/yaml.v3"
)

// maxStepTexts bounds the values one step keeps for Reads.
const maxStepTexts = 10_000

// stepTexts returns every scalar value written in a step's node (its
// handlers' and do steps' too, and what its aliases and merge keys bring
// in, each node once), for Reads.
func stepTexts(n *yaml.Node) []string {
	var texts []string
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node, isKey bool)
	walk = func(n *yaml.Node, isKey bool) {
		if n == nil || seen[n] || len(texts) >= maxStepTexts {
			return
		}
		seen[n] = true
		switch n.Kind {
		case yaml.ScalarNode:
			if !isKey {
				texts = append(texts, n.Value)
			}
		case yaml.AliasNode:
			walk(n.Alias, isKey)
		case yaml.MappingNode:
			for i, c := range n.Content {
				walk(c, i%2 == 0)
			}
		default:
			for _, c := range n.Content {
				walk(c, false)
			}
		}
	}
	walk(n, false)
	return texts
}

// Reads reports whether the step, as written (its handlers and do steps
// included), reads the variable name: ${name}, ${env.name}, the shell's
// $name, or name in a condition. It sees only what the file writes: a
// script that reads name from its environment is not seen.
func (s *Step) Reads(name string) bool {
	ref := refPattern(name)
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	for _, t := range s.texts {
		if ref.MatchString(t) {
			return true
		}
	}
	for step := range AllSteps([]*Step{s}) {
		for _, e := range []*Expr{step.When, step.until()} {
			if e != nil && word.MatchString(e.Source) {
				return true
			}
		}
	}
	return false
}

// TextReads reports whether text reads the variable name as a
// placeholder or a shell variable: ${name}, ${env.name}, $name.
func TextReads(text, name string) bool { return refPattern(name).MatchString(text) }

// refPattern matches ${name}, ${env.name} and $name (not $names).
func refPattern(name string) *regexp.Regexp {
	q := regexp.QuoteMeta(name)
	return regexp.MustCompile(`\$\{\s*(env\.)?` + q + `\b|\$` + q + `\b`)
}

// until is the step's repeat condition, or nil.
func (s *Step) until() *Expr {
	if s.Repeat == nil {
		return nil
	}
	return s.Repeat.Until
}
