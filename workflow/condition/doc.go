// Package condition compiles the conditions of a workflow file (when,
// until, filter), written in expr-lang or in Prodigy's syntax, and reports
// an error at its place in the original text, in plain words.
//
// Translate rewrites Prodigy's syntax (AND, OR, =, ${path}, is_null...) into
// expr-lang's on tokens, keeping each byte's origin; Compile compiles the
// result with Prodigy's functions, refusing a call of a function nobody
// defines, and, with Options.Env, names that are not variables. Its error is
// an *Error with the byte Offset in the condition as written:
//
//	condition.Translate("${item.size} > 10 AND item.kind = 'png'")
//	// item?.size > 10 and item?.kind == 'png'
//	program, err := condition.Compile(src, condition.Options{})
//	ok, err := expr.Run(program, map[string]any{"item": item})
package condition
