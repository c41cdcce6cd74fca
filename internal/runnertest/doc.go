// Package runnertest is what runner's end-to-end tests share: the
// repository's directory, runner built as a binary, and the setup,
// commands and helper programs of the scripts under testdata/. Only
// tests import it.
package runnertest
