package natsconn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// GitBucket is the Object Store bucket of job key's git data, the bundles
// that carry commits between the coordinator and the workers (map.isolation:
// worktree): RUNNER_GIT_<J>. Its coordinator removes it when the job ends;
// GitTTL removes what a coordinator that never came back left.
func GitBucket(key string) string { return "RUNNER_GIT_" + key }

// GitTTL is how long a bundle stays in a job's git bucket.
const GitTTL = 7 * 24 * time.Hour

// MetaBase is the metadata key of a thin tip bundle's object: the commit
// a worker must have to fetch from it.
const MetaBase = "base"

// TipBundle is the object of the bundle of commit sha: thin (against the
// commit the job started from, whose own full bundle a clone without it
// fetches first; MetaBase names it) or full.
func TipBundle(sha string, thin bool) string {
	if thin {
		return "tip/" + sha + ".thin"
	}
	return "tip/" + sha + ".full"
}

// ServerAway reports whether err says that the server did not answer
// (down, restarting, cut off) rather than that it refused: a bundle that
// could not be carried then is carried on a later delivery, not the
// item's failure.
func ServerAway(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// BucketLost reports whether err says that a job's git bucket is not on
// the server: one restarted on an empty store lost it, and the job's
// coordinator makes it again (a job that ended removed it, and its tasks
// are dropped), so a bundle that could not be carried then is carried on
// a later delivery, not the item's failure.
func BucketLost(err error) bool {
	return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
}

// ItemBundle is the object of the bundle of an item's commits, up to
// head, in one delivery of its attempt's task. Head is in the name as
// two runs may have one delivery number (a server restarted on its store
// can deliver a task again as its first delivery): one's bundle never
// replaces the other's, which its result names.
func ItemBundle(index, attempt, epoch, delivery int, head string) string {
	return fmt.Sprintf("item/%d.%d.%d.%d.%s", index, attempt, epoch, delivery, head)
}

// ItemGit is what a result says of an item's git branch (map.isolation:
// worktree): the branch, the commit its worktree started from (Base, the
// task's Tip) and the branch's head; Bundle is the object in the job's git
// bucket holding the commits Base lacks ("" when Head is Base).
type ItemGit struct {
	Branch string `json:"branch"`
	Path   string `json:"path,omitempty"` // the item's worktree on the worker
	Base   string `json:"base"`
	Head   string `json:"head"`
	Bundle string `json:"bundle,omitempty"`
}

// GitStore opens job key's git bucket, creating it when create is set.
func (o *Objects) GitStore(ctx context.Context, key string, create bool) (jetstream.ObjectStore, error) {
	ctx, cancel := context.WithTimeout(ctx, CallDeadline)
	defer cancel()
	var (
		s   jetstream.ObjectStore
		err error
	)
	if create {
		s, err = o.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: GitBucket(key), TTL: GitTTL, Storage: jetstream.FileStorage})
	} else {
		s, err = o.js.ObjectStore(ctx, GitBucket(key))
	}
	if err != nil {
		return nil, fmt.Errorf("NATS object store %s: %w", GitBucket(key), err)
	}
	return s, nil
}

// DeleteGitStore removes job key's git bucket; one that is not there is
// not an error.
func (o *Objects) DeleteGitStore(ctx context.Context, key string) error {
	err := o.js.DeleteObjectStore(ctx, GitBucket(key))
	if err == nil || BucketLost(err) {
		return nil
	}
	return fmt.Errorf("NATS object store %s: %w", GitBucket(key), err)
}
