package client_test

import (
	"context"
	"errors"
	"fmt"

	"verdict/sdk/go/client"
)

// The client in ten lines (docs/go.md); compiled by go vet and go test, not run.
func Example() {
	tlsFiles, _ := client.LocalClusterTLS("alice") // npm start's CA and certificate alice
	c, err := client.New([]string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}, client.Options{TLS: &tlsFiles})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	tx, _ := c.Transaction(client.TxnOptions{TimeoutMs: 5_000}) // the id is chosen here, by the client
	_ = tx.Enlist("shop", map[string]any{"set": map[string]string{"sku-1": "4"}})
	_ = tx.Enlist("ledger", map[string]any{"set": map[string]string{"acct-9": "-20"}})
	r, err := tx.Commit(context.Background(), 0)
	var unknown *client.OutcomeUnknownError
	if errors.As(err, &unknown) {
		r, err = c.Outcome(context.Background(), unknown.TxnID) // ask later: never a guess
	}
	fmt.Println(r.Outcome, err) // COMMITTED or ABORTED
}
