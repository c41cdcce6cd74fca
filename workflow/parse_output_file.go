package workflow

import "strings"

// outputFile reads Prodigy's output_file: a file that receives a shell or
// claude command's stdout (the output still shows and is captured as
// usual).
func (d *decoder) outputFile(f *fields, s *Step) {
	n := f.get("output_file")
	if n == nil {
		return
	}
	text, ok := d.str(n, "output_file")
	switch {
	case !ok:
	case strings.TrimSpace(text) == "":
		d.errorf(n, "output_file is empty")
	case s.Command.Kind != ShellCommand && s.Command.Kind != ClaudeCommand:
		d.errorf(f.key("output_file"), "output_file receives a command's stdout: it belongs to a shell: or claude: step, not a %s step", s.Command.Kind)
	default:
		s.OutputFile = d.template(n, "output_file", text)
	}
}
