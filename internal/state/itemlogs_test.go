package state

import (
	"strings"
	"testing"
)

func TestItemLogName(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"item_7", "item_7.log"},
		{"a.b-c+d,e=f@g", "a.b-c+d,e=f@g.log"},
		{"src/a b.rs", "src%2Fa%20b.rs.log"},
		{"..", "%2E..log"},
		{"100%", "100%25.log"},
		{"é", "%C3%A9.log"},
	} {
		if got := ItemLogName(tc.id); got != tc.want {
			t.Errorf("ItemLogName(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

func TestItemLogNameLongIDs(t *testing.T) {
	a, b := strings.Repeat("x", 300)+"a", strings.Repeat("x", 300)+"b"
	na, nb := ItemLogName(a), ItemLogName(b)
	if na == nb {
		t.Fatalf("two long ids share the log %q", na)
	}
	for _, n := range []string{na, nb, ItemLogName(strings.Repeat("/", 300))} {
		if len(n) > 255 || !strings.HasSuffix(n, ".log") {
			t.Errorf("name %q: %d bytes, want a .log of at most 255", n, len(n))
		}
	}
}

// An item's log path is asked for per attempt: it does not make the whole
// layout again each time.
func TestItemLogPathDoesNotRemakeTheLayout(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	created, err := s.Create(Meta{ID: "j"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	created.Unlock()
	opened, err := s.Open("j")
	if err != nil {
		t.Fatal(err)
	}
	for name, j := range map[string]*Job{"created": created, "opened": opened} {
		if j.Layout() != LayoutOf(j.Dir) {
			t.Errorf("%s: Layout() = %+v, want the layout of %s", name, j.Layout(), j.Dir)
		}
		// The escaped name and the joined path (one more under -race);
		// making the layout again is some twenty more.
		if n := testing.AllocsPerRun(100, func() { j.ItemLogPath("item_7") }); n > 5 {
			t.Errorf("%s: ItemLogPath allocates %v times, as if it made the layout again", name, n)
		}
	}
}
