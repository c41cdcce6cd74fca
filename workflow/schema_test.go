package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/runnerdev/runner/retryv2"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	return s
}

// instance turns a YAML or JSON workflow into what the schema validates.
func instance(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(stringKeys(v))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// stringKeys turns the mappings with keys that are not strings (such as
// on_exit_code's exit codes) into JSON objects, as editors read them.
func stringKeys(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, val := range v {
			m[fmt.Sprint(k)] = stringKeys(val)
		}
		return m
	case map[string]any:
		for k, val := range v {
			v[k] = stringKeys(val)
		}
	case []any:
		for i, val := range v {
			v[i] = stringKeys(val)
		}
	}
	return v
}

// workflowFiles returns every workflow file under examples/ and testdata/,
// including the .yml, .yaml and .json files inside txtar scripts.
func workflowFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, root := range []string{"../examples", "../testdata"} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Contains(path, "fuzz") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			switch filepath.Ext(path) {
			case ".yml", ".yaml", ".json":
				files[path] = data
			case ".txtar":
				for _, f := range txtar.Parse(data).Files {
					if ext := filepath.Ext(f.Name); ext == ".yml" || ext == ".yaml" || ext == ".json" {
						files[path+"/"+f.Name] = f.Data
					}
				}
			}
			return nil
		})
	}
	return files
}

// Every workflow the parser accepts under examples/ and testdata/ is valid
// against the schema, but those with keys runner does not know (the
// parser's warnings, --strict's errors), which the schema refuses, and
// those composed from other files (the schema describes one file).
func TestSchemaAcceptsEveryValidWorkflow(t *testing.T) {
	s := compileSchema(t)
	n := 0
	for name, src := range workflowFiles(t) {
		wf, err := Parse(name, src)
		if err != nil || wf.Composed != nil || slices.ContainsFunc(wf.Warnings, func(w *ParseError) bool { return strings.HasPrefix(w.Msg, "ignored: ") }) {
			continue // invalid on purpose (validation scripts, fuzz seeds), composed, or keys Prodigy ignores
		}
		n++
		if err := s.Validate(instance(t, src)); err != nil {
			t.Errorf("%s: valid for the parser, invalid for the schema: %v", name, err)
		}
	}
	if n < 50 {
		t.Errorf("only %d workflow files found", n)
	}
	t.Logf("%d workflow files validated", n)
}

// The schema rejects what the parser rejects for its structure.
func TestSchemaRejectsInvalidWorkflows(t *testing.T) {
	s := compileSchema(t)
	for _, src := range []string{
		"- shel: x\n",
		"- shell: x\n  claude: /fix\n",
		"- /\n",
		"- claude: /fix\n  commit_message: m\n",
		"- claude: /fix\n  on_failure: {shell: a, claude: b}\n",
		"agent: {command: claude}\ncommands: [{claude: /fix}]\n",
		"- shell: x\n  retry_config: {attempts: 0}\n",
		"- shell: x\n  retry_config: {retry_on: [netwrok]}\n",
		"- shell: x\n  retry: {}\n  retry_config: {}\n",
		"- shell: x\n  on_failure: {fail_workflow: true}\n",
		"- shell: x\n  repeat: {until: 'true'}\n",
		"name: x\n",
		"mode: mapreduce\nmap: {input: x}\n",
		"mode: mapreduce\nmap: {input: x, agent_template: [{shell: x}]}\non_item_failure: requeue\n",
		"mode: mapreduce\nmap: {input: x, max_parallel: 0, agent_template: [{shell: x}]}\n",
		"map: {input: x, agent_template: [{shell: x}]}\n",
		"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge: []\n",
		"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge: {timeout: 600}\n",
		"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge: {commands: [{shell: x}], timeout: 0}\n",
		"mode: mapreduce\nmap: {input: x, agent_template: [{claude: x}]}\nmerge_back: yes please\n",
		"commands: [{shell: x}]\nmerge: []\n",
		"- shell: x\n  validate: {threshold: 50}\n",
		"- shell: x\n  validate: {shell: a, commands: [{claude: b}]}\n",
		"- shell: x\n  validate: {shell: a, threshold: 101}\n",
		"- shell: x\n  validate: {shell: a, on_incomplete: {max_attempts: 2}}\n",
		"- shell: x\n  validate: {shell: a, on_incomplete: [{shell: b, claud: c}]}\n",
		"env: {X: {value: a, command: b}}\ncommands: [{shell: x}]\n",
		"env: {X: {condition: 'true', when_true: a}}\ncommands: [{shell: x}]\n",
		"secrets: {X: {provider: vault, key: a}}\ncommands: [{shell: x}]\n",
		"env_files: [{required: true}]\ncommands: [{shell: x}]\n",
		"profiles: {dev: {X: {command: a}}}\ncommands: [{shell: x}]\n",
		"- foreach: {do: [{shell: x}]}\n",
		"- foreach: {foreach: [a], do: []}\n",
		"- foreach: {foreach: [a], do: [{shell: x}]}\n  shell: y\n",
		"- foreach: {foreach: [a], parallel: 0, do: [{shell: x}]}\n",
		"- foreach: {foreach: [a], max_items: -1, do: [{shell: x}]}\n",
		"- foreach: [a]\n",
		"- shell: x\n  on_failure: {shell: y, max_attempts: 0}\n",
		"- shell: x\n  on_failure: {shell: y, max_attempts: 2, max_retries: 2}\n",
		"- shell: x\n  on_exit_code: {ok: echo}\n",
		"- shell: x\n  on_exit_code: {256: echo}\n",
		"- shell: x\n  on_success: []\n",
		"- shell: x\n  on_success: {shel: y}\n",
		"- write_file: {path: a}\n",
		"- write_file: {path: a, content: b, format: xml}\n",
		"mode: mapreduce\nsetup: {commands: [{shell: x}], capture_outputs: {n: {source: stdout}}}\nmap: {input: x, agent_template: [{shell: x}]}\n",
		"- shell: x\n  timeout: $(date)\n",
		"- parallel: []\n",
		"- parallel: [{shell: a}]\n  max_parallel: 0\n",
		"mode: mapreduce\nmap: {input: x, agent_template: [{parallel: [{shell: x}]}]}\n",
	} {
		if _, err := Parse("x.yml", []byte(src)); err == nil {
			t.Fatalf("the parser accepts %q", src)
		}
		if err := s.Validate(instance(t, []byte(src))); err == nil {
			t.Errorf("the schema accepts %q", src)
		}
	}
}

// The schema names exactly the keys the parser knows, so that a key added
// to one is added to the other.
func TestSchemaKeysMatchParser(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &doc); err != nil {
		t.Fatal(err)
	}
	for def, keys := range map[string][]string{
		"standard": standardKeys, "mapreduce": mapKeys,
		"step":        stepKeys,
		"retryPolicy": policyKeys, "delayPolicy": delayKeys, "breaker": breakerKeys, "repeat": repeatKeys, "map": mapPhaseKeys,
		"errorPolicy": errorPolicyKeys, "agent": agentKeys, "mergeConfig": mergeKeys, "distributed": distributedKeys, "budget": budgetKeys,
		"validateConfig": validateKeys, "onIncompleteConfig": onIncompleteKeys, "validationCommand": validationCommandKeys,
		"foreach": foreachKeys, "parallel": parallelKeys,
		"writeFile": writeFileKeys, "metadata": metadataKeys, "setupConfig": setupKeys, "captureConfig": captureConfigKeys,
	} {
		got := slices.Sorted(maps.Keys(doc.Defs[def].Properties))
		want := slices.Sorted(slices.Values(keys))
		if !slices.Equal(got, want) {
			t.Errorf("schema $defs/%s has keys %v, the parser %v", def, got, want)
		}
	}
}

// The schema lists the backoff strategies and built-in matchers that
// retryv2 defines, so that one added there is added here.
func TestSchemaListsRetryKinds(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			OneOf []struct {
				Enum       []string       `json:"enum"`
				Properties map[string]any `json:"properties"`
			} `json:"oneOf"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &doc); err != nil {
		t.Fatal(err)
	}
	backoff, matcher := doc.Defs["backoff"].OneOf, doc.Defs["matcher"].OneOf
	if len(backoff) != 2 || len(matcher) == 0 {
		t.Fatalf("schema $defs/backoff or $defs/matcher changed shape: %+v %+v", backoff, matcher)
	}
	// custom is written only in its map form: it needs its delays.
	bareStrategies := slices.DeleteFunc(slices.Clone(strategyNames), func(s string) bool { return s == string(retryv2.Custom) })
	for what, pair := range map[string][2][]string{
		"backoff names":     {backoff[0].Enum, bareStrategies},
		"backoff map keys":  {slices.Sorted(maps.Keys(backoff[1].Properties)), slices.Sorted(slices.Values(strategyNames))},
		"built-in matchers": {matcher[0].Enum, builtinMatchers},
	} {
		if got, want := pair[0], pair[1]; !slices.Equal(got, want) {
			t.Errorf("schema %s %q, retryv2 %q", what, got, want)
		}
	}
}
