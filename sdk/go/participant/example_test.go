package participant_test

import (
	"context"

	"verdict/sdk/go/client"
	"verdict/sdk/go/participant"
)

// A memory participant (docs/go.md); compiled by go vet and go test, not run.
func Example() {
	p, err := participant.Start(context.Background(), participant.Config{
		ParticipantID: "shop",
		Nodes:         []string{"127.0.0.1:7001", "127.0.0.1:7002"},
		DataDir:       "/var/lib/shop",
		Resource:      participant.NewMemoryResource(),
		Endpoint:      "127.0.0.1:7101",                                                      // where the nodes dial it
		TLS:           &client.TLSFiles{CA: "ca.pem", Cert: "shop.pem", Key: "shop-key.pem"}, // or Insecure: true
	}) // serves, registers, resolves what is in doubt
	if err != nil {
		panic(err)
	}
	defer p.Stop()
}
