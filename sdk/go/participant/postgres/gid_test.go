package postgres

import (
	"strings"
	"testing"
)

// Vectors from the TypeScript resource's gidPrefix/gidOf (src/participant/postgres-gid.ts): the gids must agree byte for byte.
func TestGIDsAreTheTypeScriptResources(t *testing.T) {
	long := strings.Repeat("c", 120)
	cases := []struct{ cluster, participant, txn, prefix, gid string }{
		{"c1", "shop", "t1", "verdict:c1:shop:", "verdict:c1:shop:t1"},
		{"c é", "p", "x:y", "verdict:c%20%C3%A9:p:", "verdict:c%20%C3%A9:p:x%3Ay"},
		{long, "p", "t", "verdict:#ae41be6ce3624280536fe3722615ee57:", "verdict:#ae41be6ce3624280536fe3722615ee57:t"},
		{"c", "p", "T" + strings.Repeat("x", 127), "verdict:c:p:", "verdict:c:p:T" + strings.Repeat("x", 127)},
		{strings.Repeat("c", 60), strings.Repeat("p", 30), strings.Repeat("a", 128),
			"verdict:" + strings.Repeat("c", 60) + ":" + strings.Repeat("p", 30) + ":",
			"verdict:" + strings.Repeat("c", 60) + ":" + strings.Repeat("p", 30) + ":#6836cf13bac400e9105071cd6af47084dfacad4e"},
	}
	for _, c := range cases {
		p := GIDPrefix(c.cluster, c.participant)
		if p != c.prefix {
			t.Errorf("GIDPrefix(%q, %q) = %q, want %q", c.cluster, c.participant, p, c.prefix)
		}
		g := GIDOf(p, c.txn)
		if g != c.gid || len(g) > GIDBytesMax || !gidPattern.MatchString(g) {
			t.Errorf("GIDOf(%q, %q) = %q, want %q", p, c.txn, g, c.gid)
		}
		want := c.txn
		if strings.Contains(g, "#"+sha256Hex(c.txn)[:40]) {
			want = "" // a hashed gid names its transaction only through the journal
		}
		if got := ParseGID(p, g); got != want {
			t.Errorf("ParseGID(%q) = %q, want %q", g, got, want)
		}
	}
	if ParseGID("verdict:c:p:", "verdict:c:q:t1") != "" || ParseGID("verdict:c:p:", "verdict:c:p:%zz") != "" {
		t.Error("a foreign or malformed gid names no transaction")
	}
}

func TestParsePayload(t *testing.T) {
	if s, r := ParsePayload(nil); s != nil || r != "" {
		t.Error("an empty payload: the work was done through Work")
	}
	if s, r := ParsePayload([]byte(`{"sql":["INSERT INTO t VALUES (1)"]}`)); r != "" || len(s) != 1 {
		t.Errorf("statements: %v %q", s, r)
	}
	for _, bad := range []string{`[]`, `{"sql":"x"}`, `{"sql":[""]}`, `{"sql":["x"],"other":1}`, `not json`} {
		if _, r := ParsePayload([]byte(bad)); r == "" {
			t.Errorf("%s is refused", bad)
		}
	}
}
