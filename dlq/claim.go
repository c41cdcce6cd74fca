package dlq

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// lease is the stored claim on one item.
type lease struct {
	Owner string    `json:"owner"`
	Until time.Time `json:"until"`
}

// Claim leases items to owner until the given time, in one write
// transaction, so that two `runner dlq retry` processes never run the same
// item. It claims each queued item that is unclaimed, whose lease expired
// (until < Now) or whose holder is gone (Options.Gone), or that owner
// already holds (renewing it), and returns
// those ids in argument order. Items not in the queue are never claimed.
// Remove and Release end a lease.
func (d *DB) Claim(owner string, until time.Time, itemIDs ...string) (claimed []string, err error) {
	if owner == "" {
		return nil, fmt.Errorf("dlq: %s: claim: empty owner", d.path)
	}
	if len(itemIDs) == 0 {
		return nil, nil
	}
	now := d.now()
	mine, err := json.Marshal(lease{Owner: owner, Until: until.Round(0)})
	if err != nil {
		return nil, err
	}
	err = d.update("claim", func(tx *bolt.Tx) error {
		claimed = claimed[:0]
		_, ids, err := buckets(tx)
		if err != nil {
			return err
		}
		claims := tx.Bucket(bucketClaims)
		seen := make(map[string]bool, len(itemIDs))
		holderGone := map[string]bool{} // asked once per holder, not per item
		gone := func(holder string) bool {
			g, ok := holderGone[holder]
			if !ok {
				g = d.gone != nil && d.gone(holder)
				holderGone[holder] = g
			}
			return g
		}
		for _, id := range itemIDs {
			if seen[id] || ids.Get([]byte(id)) == nil {
				continue
			}
			seen[id] = true
			if v := claims.Get([]byte(id)); v != nil {
				var l lease
				// An unreadable lease counts as expired; so does one whose
				// holder is gone.
				if json.Unmarshal(v, &l) == nil && l.Owner != owner && !l.Until.Before(now) && !gone(l.Owner) {
					continue
				}
			}
			if err := claims.Put([]byte(id), mine); err != nil {
				return err
			}
			claimed = append(claimed, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// Release ends owner's leases on the given items; leases held by others and
// items not claimed are left alone.
func (d *DB) Release(owner string, itemIDs ...string) error {
	if len(itemIDs) == 0 {
		return nil
	}
	return d.update("release", func(tx *bolt.Tx) error {
		if _, _, err := buckets(tx); err != nil {
			return err
		}
		claims := tx.Bucket(bucketClaims)
		for _, id := range itemIDs {
			v := claims.Get([]byte(id))
			if v == nil {
				continue
			}
			var l lease
			if json.Unmarshal(v, &l) == nil && l.Owner != owner {
				continue
			}
			if err := claims.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
}
