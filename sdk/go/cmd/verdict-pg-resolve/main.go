// Command verdict-pg-resolve commits or rolls back by hand a transaction a
// Go PostgreSQL participant holds prepared (R4; participant/postgres,
// ResolveByHand): for the day the cluster is unreachable and the prepared
// transaction holds locks nobody can wait for any longer. The act is
// recorded in verdict_heuristics before it is done, never reversed, and
// reported to the cluster by the participant.
//
//	verdict-pg-resolve --url postgres://... --cluster-id prod --id shop \
//	    --txn T --commit --operator alice --reason "cluster down, locks held"
//
// It prints the act as one JSON object (with "performed": whether this run
// did it, false for a repeat) and exits 0; a refusal is printed on stderr
// with exit status 1, a usage error with 2.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"verdict/sdk/go/participant"
	"verdict/sdk/go/participant/postgres"
)

func main() {
	url := flag.String("url", "", "the participant's database (a lib/pq URL or connection string)")
	clusterID := flag.String("cluster-id", "", "the cluster's id")
	id := flag.String("id", "", "the participant's id")
	txn := flag.String("txn", "", "the transaction id, or its gid")
	commit := flag.Bool("commit", false, "COMMIT PREPARED")
	rollback := flag.Bool("rollback", false, "ROLLBACK PREPARED")
	operator := flag.String("operator", "", "who acts (recorded and reported)")
	reason := flag.String("reason", "", "why (recorded and reported)")
	flag.Parse()
	if *url == "" || *clusterID == "" || *id == "" || *txn == "" || *commit == *rollback {
		fmt.Fprintln(os.Stderr, "usage: verdict-pg-resolve --url URL --cluster-id C --id P --txn T (--commit | --rollback) --operator WHO --reason WHY")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	act, performed, err := postgres.ResolveByHand(ctx, *url, *clusterID, *id, *txn, *commit, *operator, *reason)
	if err != nil {
		var he *postgres.HeuristicError
		if errors.As(err, &he) {
			fmt.Fprintln(os.Stderr, "verdict-pg-resolve:", he.Reason)
		} else {
			fmt.Fprintln(os.Stderr, "verdict-pg-resolve:", err)
		}
		os.Exit(1)
	}
	b, _ := json.Marshal(struct {
		participant.HeuristicAct
		Performed bool `json:"performed"`
	}{act, performed})
	fmt.Println(string(b))
}
