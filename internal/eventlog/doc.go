// Package eventlog is a job's append-only event log: one JSON object per
// line, written with a single write per event so that concurrent readers and
// crashes never see half an event.
//
// An Event has a Type (the constants, all listed in Types; SPEC §8 names
// those a user can rely on), its job, its item and its Fields. Only this
// package's constructors (StepStarted, ItemFailed, JobFinished...) make
// events, so that each type's fields are named in one place; a Log appends
// them, stamped with the time and the job, redacted:
//
//	log, err := eventlog.Open(path, jobID, eventlog.Options{Redact: mask})
//	_, err = log.Emit(eventlog.StepStarted("build", 1, "make"))
//
// Read, Scan and Raw read a log back, the events a Query selects; Follow goes
// on with those appended until its Until says to stop. Describe and
// AppendLine say what an event means, as `runner events` prints it.
package eventlog
