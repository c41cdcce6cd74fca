//go:build !race

package mapreduce

const raceOn = false
