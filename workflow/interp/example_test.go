package interp_test

import (
	"errors"
	"fmt"

	"github.com/runnerdev/runner/workflow/interp"
)

// A command template is parsed once and expanded for each item. In Shell
// mode every value is quoted for where it stands, so a hostile value stays
// one argument; $HOME is not runner's and is left for the shell.
func Example() {
	tmpl, err := interp.Parse(`grep -c "${item.pattern}" ${item.file} > $HOME/${item.id}.count`)
	if err != nil {
		fmt.Println(err)
		return
	}
	item := interp.MapLookup(map[string]any{
		"item": map[string]any{"id": 7, "pattern": `say "hi"`, "file": "notes; rm -rf /"},
	})
	cmd, err := tmpl.Expand(item, interp.Shell)
	fmt.Println(cmd, err)
	// Output:
	// grep -c "say \"hi\"" 'notes; rm -rf /' > $HOME/'7'.count <nil>
}

// Plain mode inserts values as they are, for environment values and paths;
// a default stands in for an empty or undefined value.
func ExampleTemplate_Expand_plain() {
	tmpl, _ := interp.Parse(`${item.dir}/${item.name:-unnamed}.log`)
	path, err := tmpl.Expand(interp.MapLookup(map[string]any{"item": map[string]any{"dir": "/var/log/my app"}}), interp.Plain)
	fmt.Println(path, err)
	// Output:
	// /var/log/my app/unnamed.log <nil>
}

// A path in one of runner's namespaces that the lookup does not define is
// an error rather than text the shell would see.
func ExampleUndefinedError() {
	tmpl, _ := interp.Parse(`echo ${steps.build.output}`)
	_, err := tmpl.Expand(interp.MapLookup(map[string]any{}), interp.Shell)
	var undefined *interp.UndefinedError
	fmt.Println(errors.As(err, &undefined), undefined.Path)
	// Output:
	// true steps.build.output
}

func ExampleTemplate_Refs() {
	tmpl, _ := interp.Parse(`curl -H "Authorization: $TOKEN" ${item.url|raw}`)
	fmt.Println(tmpl.Refs())
	// Output:
	// [TOKEN item.url]
}
