// Package dlq is the dead-letter queue: a bbolt file per job holding the
// items that still failed, each with its whole failure history.
//
// A DB is a short-lived handle. Every caller opens the file, runs one
// operation and closes it again, so that a running job (which writes) and
// `runner dlq list` in another process (which reads) never wait on each
// other for long:
//
//	d, err := dlq.Open(path, dlq.Options{})
//	if err != nil {
//		return err // errors.Is(err, dlq.ErrLocked) when another process holds it
//	}
//	defer d.Close()
//	return d.Add(dlq.Entry{JobID: job, ItemID: id, Item: raw, Failure: f})
//
// A process that writes often (a job's map phase) uses a Writer instead:
// one handle for all its goroutines, the Adds that wait for a commit
// batched into the next, each returning once its own entries are durable,
// the file closed when idle for a few milliseconds and, while writes keep
// coming, every so often for long enough that another process gets in.
//
// Items are kept in item_index order. Add is an upsert: a new item is
// created, an existing one gets the failure appended to its history.
// Summary reads the item count, the latest failure and a generation that
// every change of the items moves, without decoding items. Claim and
// Release give out leases so that two concurrent `runner dlq retry`
// processes never run the same item. CompileFilter, Signature (what
// failures of the same error share) and WriteJSON serve `runner dlq`.
package dlq
