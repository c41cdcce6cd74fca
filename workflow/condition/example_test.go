package condition_test

import (
	"errors"
	"fmt"

	"github.com/expr-lang/expr"

	"github.com/runnerdev/runner/workflow/condition"
)

// A filter in Prodigy's syntax is translated to expr-lang's, compiled and
// run against an item.
func Example() {
	src := "${item.size} > 10 AND item.kind = 'png'"
	fmt.Println(condition.Translate(src))
	program, err := condition.Compile(src, condition.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, item := range []map[string]any{{"size": 12, "kind": "png"}, {"size": 12, "kind": "gif"}} {
		ok, err := expr.Run(program, map[string]any{"item": item})
		fmt.Println(item["kind"], ok, err)
	}
	// Output:
	// item?.size > 10 and item?.kind == 'png'
	// png true <nil>
	// gif false <nil>
}

// A condition that does not compile says where in the text as written,
// in plain words.
func ExampleError() {
	src := "item.size > 10 && sizeof(item) < 3"
	_, err := condition.Compile(src, condition.Options{})
	var ce *condition.Error
	if errors.As(err, &ce) {
		fmt.Printf("%s\n%*s^ %s\n", src, ce.Offset, "", ce.Message)
	}
	// Output:
	// item.size > 10 && sizeof(item) < 3
	//                   ^ unknown function sizeof (Prodigy's functions are is_null, is_not_null, contains, starts_with, ends_with, matches, length; expr-lang's, such as len, upper and trim, work too)
}
