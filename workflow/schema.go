package workflow

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of the workflow format, for
// editors and other tools; Parse is the authority, and a test keeps the
// two in step.
//
//go:embed schema.json
var Schema []byte
