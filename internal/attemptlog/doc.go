// Package attemptlog writes and reads the output logs of map items and
// steps: a file each, created on its first write, in which each attempt's
// output follows a header line (Header) naming the attempt and the run.
package attemptlog
