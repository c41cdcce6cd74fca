package workflow

import "testing"

// Step.Reads sees ${NAME}, ${env.NAME}, $NAME and a condition's NAME in
// the step and its handlers, and no longer name that starts with NAME.
func TestStepReads(t *testing.T) {
	wf, err := Parse("s.yml", []byte(`
- shell: echo $A ${B|json} ${env.C} $DD
  env: {X: "${E}"}
  on_failure:
    shell: echo ${F}
  on_success:
    - {shell: "true", when: "G == 1"}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := wf.Steps[0]
	for _, name := range []string{"A", "B", "C", "DD", "E", "F", "G"} {
		if !s.Reads(name) {
			t.Errorf("Reads(%s) = false", name)
		}
	}
	for _, name := range []string{"D", "H", "echo"} {
		if s.Reads(name) {
			t.Errorf("Reads(%s) = true", name)
		}
	}
}
