package workflow

// Suggest returns the word of known closest to w when it is close enough
// to be a misspelling of it, else "": the did-you-mean of runner's
// messages, for the command line's flags as for a file's keys.
func Suggest(w string, known []string) string { return suggest(w, known) }
