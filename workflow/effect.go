package workflow

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/runnerdev/runner/workflow/interp"
)

// drivingFields are the fields of a Step that say how runner drives it
// (how long, how often, under which label) rather than what it does: a
// resumed job may change them in a step that finished, since they shaped
// neither its effect nor what later steps read. Every other field does,
// so that a field added to Step is compared until it is listed here.
var drivingFields = []string{
	"Pos", "Index", "Path", "texts", // where the file writes the step
	"Name",                  // its label (name, description)
	"Timeout", "TimeoutVar", // timeout
	"Retry", "Retryable", "Breaker", "Repeat", // retry_config, retryable, circuit_breaker, repeat
	"Parallel", // the parallel: block it runs in, with the others at once
}

// effectKeys are the keys a file writes the other fields of a Step with,
// for messages; Command is named by its kind.
var effectKeys = map[string]string{
	"Command": "", "Foreach": "foreach", "ID": "id", "Env": "env", "ClearEnv": "clear_env",
	"WorkingDir": "working_dir", "Capture": "capture_output", "CaptureFormat": "capture_format",
	"CaptureStreams": "capture_streams", "Outputs": "outputs", "OutputFile": "output_file",
	"When": "when", "OnFailure": "on_failure", "OnSuccess": "on_success", "OnExitCode": "on_exit_code",
	"CommitRequired": "commit_required", "AutoCommit": "auto_commit", "CommitMessage": "commit_message",
	"Validate": "validate", "Output": "output",
}

// EffectChanges returns the keys of the fields in which next differs
// from s in what the step does or leaves for the steps after it: its
// command, write_file content, id, env, captures, outputs, output_file,
// condition, handlers, commit settings, validation (a handler's or a
// foreach do step's compared the same way). A change of its timeout,
// retries, circuit breaker, repeat or name is not one.
func (s *Step) EffectChanges(next *Step) []string {
	var keys []string
	a, b := reflect.ValueOf(s).Elem(), reflect.ValueOf(next).Elem()
	for i := range a.NumField() {
		f := a.Type().Field(i)
		if slices.Contains(drivingFields, f.Name) || sameEffect(a.Field(i), b.Field(i)) {
			continue
		}
		key, ok := effectKeys[f.Name]
		switch {
		case !ok:
			key = f.Name
		case key == "":
			key = string(next.Command.Kind)
		}
		keys = append(keys, key)
	}
	return keys
}

var (
	posType      = reflect.TypeFor[Pos]()
	stepType     = reflect.TypeFor[*Step]()
	templateType = reflect.TypeFor[*interp.Template]()
	exprType     = reflect.TypeFor[*Expr]()
)

// sameEffect compares two values of a step's field: placeholders and
// expressions by their text, positions not at all, steps by
// EffectChanges.
func sameEffect(a, b reflect.Value) bool {
	switch t := a.Type(); {
	case t == posType:
		return true
	case a.Kind() == reflect.Pointer && (a.IsNil() || b.IsNil()):
		return a.IsNil() == b.IsNil()
	case t == stepType:
		return len(a.Interface().(*Step).EffectChanges(b.Interface().(*Step))) == 0
	case t == exprType:
		return a.Interface().(*Expr).Source == b.Interface().(*Expr).Source
	case t == templateType:
		return a.Interface().(*interp.Template).String() == b.Interface().(*interp.Template).String()
	}
	switch a.Kind() {
	case reflect.Pointer:
		return sameEffect(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameEffect(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameEffect(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			if w := b.MapIndex(it.Key()); !w.IsValid() || !sameEffect(it.Value(), w) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	}
	panic(fmt.Sprintf("workflow: a step's %s is not compared", a.Type()))
}
