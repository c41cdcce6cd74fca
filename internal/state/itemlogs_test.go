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
