package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// ResolveByHand refuses what it cannot act on before it touches a database (this DSN would never connect).
func TestResolveByHandRefusesBadInputBeforeActing(t *testing.T) {
	const dsn = "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"
	prefix := GIDPrefix("prod", "shop")
	for _, c := range []struct {
		name, target, operator, reason, want string
	}{
		{"no operator", "t1", " ", "locks held", "the operator must be"},
		{"an operator too long", "t1", strings.Repeat("a", OperatorCharsMax+1), "locks held", "the operator must be"},
		{"no reason", "t1", "alice", "", "the reason must be"},
		{"a reason too long", "t1", "alice", strings.Repeat("r", ReasonCharsMax+1), "the reason must be"},
		{"another participant's gid", GIDOf(GIDPrefix("prod", "ledger"), "t1"), "alice", "locks held", "is not a gid of participant"},
		{"a hashed gid", prefix + "#" + strings.Repeat("0", 40), "alice", "locks held", "is hashed"},
	} {
		_, performed, err := ResolveByHand(context.Background(), dsn, "prod", "shop", c.target, true, c.operator, c.reason)
		var he *HeuristicError
		if !errors.As(err, &he) || !strings.Contains(he.Reason, c.want) || performed {
			t.Errorf("%s: %v (performed %v), want a refusal saying %q", c.name, err, performed, c.want)
		}
	}
}
