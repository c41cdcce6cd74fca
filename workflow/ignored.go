package workflow

import "gopkg.in/yaml.v3"

// ignoredKey is a key that Prodigy accepts and never acts on: its structs
// have no deny_unknown_fields, so a key they lack is dropped, and some they
// parse are used nowhere. runner accepts each with one warning, so that
// Prodigy's files validate; a key that is not in these lists stays an
// error (a misspelt key of runner's own gets a did-you-mean).
type ignoredKey struct {
	key   string
	about string // what the key was for in Prodigy
}

// The keys Prodigy ignores, by the mapping they stand in; each comes from
// Prodigy's structs (src/config/command.rs, src/config/mapreduce.rs at
// 480b22a4) or its real workflow files.
var (
	// stepIgnored: WorkflowStepCommand's analysis (its code analysis,
	// removed in Prodigy v0.3.0: "Analysis functionality has been
	// removed"), its analyze beside a command (which runs the command;
	// a step with analyze alone is analyzeStep), and focus and inputs,
	// which older files give a step and no struct reads.
	stepIgnored = []ignoredKey{
		{"analysis", "Prodigy's code analysis before a command"},
		{"analyze", "Prodigy's code analysis, which it never runs"},
		{"focus", "a focus for Prodigy's code analysis"},
		{"inputs", "inputs of Prodigy's structured commands"},
	}
	// metadataIgnored: CommandMetadata's analysis.
	metadataIgnored = []ignoredKey{stepIgnored[0]}
	// mapIgnored: keys of older MapReduce files that MapPhaseYaml lacks.
	mapIgnored = []ignoredKey{
		{"timeout_per_agent", "an agent timeout of older Prodigy; runner's is agent_timeout"},
		{"retry_on_failure", "an item retry of older Prodigy; runner's is retry_config"},
	}
	// validateItemIgnored: a validate list element is a command; a
	// result file, threshold or on_incomplete written in it is dropped
	// (they belong to the validate mapping).
	validateItemIgnored = []ignoredKey{
		{"result_file", "in a validate list element; validate's result_file belongs in the validate mapping"},
		{"threshold", "in a validate list element; validate's threshold belongs in the validate mapping"},
		{"on_incomplete", "in a validate list element; validate's on_incomplete belongs in the validate mapping"},
	}
	// topIgnored: the top-level config: of older files, which WorkflowConfig
	// lacks.
	topIgnored = []ignoredKey{{"config", "settings of older Prodigy versions"}}
)

// ignored returns the entry of list for key, if the key is one Prodigy
// ignores there.
func ignored(list []ignoredKey, key string) (ignoredKey, bool) {
	for _, k := range list {
		if k.key == key {
			return k, true
		}
	}
	return ignoredKey{}, false
}

// warnIgnored records the one warning for a key Prodigy ignores.
func (d *decoder) warnIgnored(k *yaml.Node, ig ignoredKey) {
	d.warnf(k, "%s (%s) has no effect; Prodigy ignores it too", ig.key, ig.about)
}

// analyzeStep reports whether a step is Prodigy's analyze: step (a mapping
// with analyze and no command), which Prodigy parses and never runs; it
// warns once, and the step is left out.
func (d *decoder) analyzeStep(n *yaml.Node) bool {
	m := d.resolve(n)
	if m == nil || m.Kind != yaml.MappingNode {
		return false
	}
	var analyze *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch k := m.Content[i]; k.Value {
		case "analyze":
			analyze = k
		case "shell", "claude", "foreach", "write_file", "test", "name":
			return false
		}
	}
	if analyze == nil {
		return false
	}
	d.warnf(analyze, "analyze: steps (Prodigy's code analysis) have no effect and are left out; Prodigy parses them and never runs them either")
	return true
}
