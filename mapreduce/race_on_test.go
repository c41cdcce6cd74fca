//go:build race

package mapreduce

// raceOn reports whether the tests run with -race.
const raceOn = true
