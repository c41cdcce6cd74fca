// Package e2e holds runner's process-level tests: runner, its agents,
// workers and NATS servers as processes, killed at random moments (crash
// and chaos tests), on a full or read-only disk, Prodigy's own workflow
// files, the scripts of testdata/script run again on agents and on NATS
// workers, the files of finished jobs' directories, and the report in a
// real browser. It has no code but tests.
package e2e
