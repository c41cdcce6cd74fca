package dlq

import (
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Summary is what a listing needs of a queue, read without decoding its
// items: how many there are, the latest last failure among them, and the
// generation, which every write transaction that changes the items
// increments (Add, Remove, Purge; not Claim or Release), so that a caller
// can tell whether the queue changed since it last looked.
type Summary struct {
	Items       int
	LastFailure time.Time // zero when the queue is empty
	Generation  uint64
}

// keySummary holds a format "2" file's item count and generation, 8 bytes
// each, big-endian; bucketLast indexes the items by last failure
// (lastKey), so that the latest one is the bucket's last key.
var (
	keySummary = []byte("summary")
	bucketLast = []byte("last")
)

// Summary returns the queue's summary. A file of format "1" (written
// before the summary was kept) is counted by reading every item, until
// its next write open adds the summary; a view of a missing file is
// empty.
func (d *DB) Summary() (Summary, error) {
	var s Summary
	err := d.view("summary", func(tx *bolt.Tx) error {
		var ok bool
		s, ok = readSummary(tx)
		if !ok {
			return scanSummary(tx, &s)
		}
		return nil
	})
	return s, err
}

// readSummary reads the stored summary; ok is false when the file keeps
// none (format "1").
func readSummary(tx *bolt.Tx) (s Summary, ok bool) {
	meta, last := tx.Bucket(bucketMeta), tx.Bucket(bucketLast)
	if meta == nil || last == nil {
		return s, false
	}
	v := meta.Get(keySummary)
	if len(v) != 16 {
		return s, false
	}
	s.Items = int(binary.BigEndian.Uint64(v))
	s.Generation = binary.BigEndian.Uint64(v[8:])
	if k, _ := last.Cursor().Last(); len(k) >= 8 {
		s.LastFailure = time.Unix(0, int64(binary.BigEndian.Uint64(k)^(1<<63)))
	}
	return s, true
}

// scanSummary counts the items of a file that keeps no summary.
func scanSummary(tx *bolt.Tx, s *Summary) error {
	items := tx.Bucket(bucketItems)
	if items == nil {
		return nil
	}
	return items.ForEach(func(k, v []byte) error {
		last, err := lastFailure(v)
		if err != nil {
			return damagedf("item key %q: %v", k, err)
		}
		s.Items++
		if last.After(s.LastFailure) {
			s.LastFailure = last
		}
		return nil
	})
}

// lastFailure reads the last failure time of a stored item.
func lastFailure(v []byte) (time.Time, error) {
	var it struct {
		LastFailure time.Time `json:"last_failure"`
	}
	err := json.Unmarshal(v, &it)
	return it.LastFailure, err
}

// lastKey is an item's key in bucketLast: its last failure in Unix
// nanoseconds, big-endian with the sign bit flipped, then its id.
func lastKey(at time.Time, id string) []byte {
	k := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(at.UnixNano())^(1<<63))
	return append(k, id...)
}

// changed records in the summary a write transaction that changed the
// items: delta items more, and the next generation.
func changed(tx *bolt.Tx, delta int) error {
	s, _ := readSummary(tx)
	s.Items += delta
	s.Generation++
	return putSummary(tx, s)
}

func putSummary(tx *bolt.Tx, s Summary) error {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, uint64(max(s.Items, 0)))
	binary.BigEndian.PutUint64(v[8:], s.Generation)
	return tx.Bucket(bucketMeta).Put(keySummary, v)
}

// addSummary gives a format "1" file the summary and the index of last
// failures (format "2"), from its items.
func addSummary(tx *bolt.Tx) error {
	if _, ok := readSummary(tx); ok {
		return nil
	}
	last, err := tx.CreateBucketIfNotExists(bucketLast)
	if err != nil {
		return damagedf("bucket %s: %v", bucketLast, err)
	}
	var s Summary
	err = tx.Bucket(bucketItems).ForEach(func(k, v []byte) error {
		at, err := lastFailure(v)
		if err != nil {
			return damagedf("item key %q: %v", k, err)
		}
		s.Items++
		if len(k) < 9 {
			return damagedf("item key %q: too short", k)
		}
		return last.Put(lastKey(at, string(k[9:])), nil) // itemKey: index, 0, id
	})
	if err != nil {
		return err
	}
	return putSummary(tx, s)
}
