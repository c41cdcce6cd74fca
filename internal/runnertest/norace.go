//go:build !race

package runnertest

// Race reports whether the tests were built with -race (and so is the
// runner binary Build makes for them).
const Race = false
