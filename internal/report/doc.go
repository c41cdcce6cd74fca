// Package report pictures a job from its events, read after it ran: the
// HTML page of `runner report` and the JUnit XML of `--junit`.
//
// WriteHTML draws a Job (its metadata, its event log, read once line by
// line, its DLQ items, and for a job that ran on a job branch its Branches
// as the repository has them now) as one self-contained page, in memory
// that does not grow with the job's items: a summary whose item counts add
// up, a timeline with a lane per step and per agent slot and a break for
// each time the job was not running (the first 5,000 attempts drawn one by
// one, the others merged into cells per slot and span of time), the steps
// table, an agent job's merges and branches, and the dead-letter queue.
// WriteJUnit writes a test case per step, or per item with the setup and
// reduce steps, flaky where retries made it pass:
//
//	err := report.WriteHTML(w, report.Job{Meta: meta, EventLog: path, DLQ: items})
//	err = report.WriteJUnit(w, report.JUnitJob{Meta: meta, EventLog: path}, nil)
package report
