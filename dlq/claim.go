package dlq

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Lease is the stored claim on one item.
type Lease struct {
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
	mine, err := json.Marshal(Lease{Owner: owner, Until: until.Round(0)})
	if err != nil {
		return nil, err
	}
	err = d.update("claim", func(tx *bolt.Tx) error {
		claimed = claimed[:0]
		_, ids, err := buckets(tx)
		if err != nil {
			return err
		}
		held := d.leases(tx)
		seen := make(map[string]bool, len(itemIDs))
		for _, id := range itemIDs {
			if seen[id] || ids.Get([]byte(id)) == nil {
				continue
			}
			seen[id] = true
			if l, ok := held(id); ok && l.Owner != owner {
				continue
			}
			if err := tx.Bucket(bucketClaims).Put([]byte(id), mine); err != nil {
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

// Holder returns the lease that keeps an item from being claimed by
// others: one that has not expired and whose holder is not gone. ok is
// false when the item is free.
func (d *DB) Holder(itemID string) (l Lease, ok bool, err error) {
	err = d.view("holder", func(tx *bolt.Tx) error {
		if tx.Bucket(bucketClaims) != nil {
			l, ok = d.leases(tx)(itemID)
		}
		return nil
	})
	return l, ok, err
}

// leases returns a function that reports the live lease on an item (see
// Holder). It asks Gone once per holder, not once per item. An unreadable
// lease counts as expired.
func (d *DB) leases(tx *bolt.Tx) func(itemID string) (Lease, bool) {
	claims, now := tx.Bucket(bucketClaims), d.now()
	holderGone := map[string]bool{}
	return func(itemID string) (Lease, bool) {
		v := claims.Get([]byte(itemID))
		var l Lease
		if v == nil || json.Unmarshal(v, &l) != nil || l.Until.Before(now) {
			return Lease{}, false
		}
		g, asked := holderGone[l.Owner]
		if !asked {
			g = d.gone != nil && d.gone(l.Owner)
			holderGone[l.Owner] = g
		}
		return l, !g
	}
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
			var l Lease
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
