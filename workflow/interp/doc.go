// Package interp expands ${...} placeholders in command templates, escaping
// each value for the shell quoting context it lands in.
//
// Parse scans a template once into a Template; Expand fills it from a
// Lookup (MapLookup over a map of variables) in Shell mode, each value quoted
// for where it stands, or in Plain mode, values as they are (environment
// values, paths):
//
//	tmpl, err := interp.Parse(`grep -c "${item.pattern}" ${item.file}`)
//	cmd, err := tmpl.Expand(interp.MapLookup(vars), interp.Shell)
//	// grep -c "say \"hi\"" 'notes; rm -rf /'
//
// Parse scans the template the way sh (dash, and bash where they differ)
// would and records, for every placeholder, whether it stands unquoted,
// inside double or single quotes, in a here-document body, in a comment, and
// so on. Expand in Shell mode then escapes each value so that it reaches the
// command as exactly one intact string and is never run. Where no safe
// escaping exists (inside $'...' or a shell ${...} expansion; arithmetic
// takes base-10 integers only) or the scanner cannot be sure of the context
// (for example after "case" inside $(...)), Expand returns an error instead
// of guessing.
//
// The ${...} forms are recognized everywhere. The bare $NAME form is only
// substituted in Shell mode where sh itself would expand it, so the $NF in
// awk '{print $NF}' stays as written even when NF is defined. A path in one
// of runner's Namespaces that the lookup does not define (and that has no
// default) is an *UndefinedError; Computed recognises the variables worked
// out when read (${file:PATH}, ${cmd:COMMAND}...), which the caller's Lookup
// resolves.
//
// The guarantee is about quoting only: a command that itself evaluates its
// arguments (eval, sh -c, bash's [[ x -eq y ]] or let) can still run code
// found in a value.
package interp
