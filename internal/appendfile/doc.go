// Package appendfile keeps files of lines whole across crashes and full
// disks: a new line never lands on the torn tail of a write that was cut
// short.
//
// Open opens a file for appending (made with mode 0600 if absent) and, when
// no other File has it open, first cuts an incomplete last line. A File holds
// a shared flock until Close, so that Open in another process leaves its line
// in progress alone, and it refuses every Write after one of its own writes
// was cut short: the next Open repairs the file.
//
//	f, err := appendfile.Open(path)
//	if err != nil {
//		return err
//	}
//	defer f.Close()
//	_, err = f.Write(line) // whole lines, one Write each
//
// The event log, a job's journal and item log, and a map phase's results are
// written through it.
package appendfile
