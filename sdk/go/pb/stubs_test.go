package pb_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	cpb "verdict/sdk/go/pb/coordinatorpb"
	ppb "verdict/sdk/go/pb/participantpb"
)

// The tests below read proto/, outside this module, through protoc: go
// test's cache does not see those files, so run them with -count=1 (as
// test/process/go-test.test.ts does) after changing a .proto file.

// The checked-in stubs are what generate.sh makes from proto/ today.
func TestCheckedInStubsMatchProto(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("sh", filepath.Join("..", "generate.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v: %s", err, b)
	}
	for _, f := range []string{"coordinatorpb/coordinator.pb.go", "coordinatorpb/coordinator_grpc.pb.go", "participantpb/participant.pb.go", "participantpb/participant_grpc.pb.go", "sagapb/saga.pb.go", "sagapb/saga_grpc.pb.go"} {
		fresh, err := os.ReadFile(filepath.Join(out, "pb", f))
		if err != nil {
			t.Fatal(err)
		}
		checkedIn, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v: run sdk/go/generate.sh", f, err)
		}
		if !bytes.Equal(fresh, checkedIn) {
			t.Errorf("stale stub pb/%s: run sdk/go/generate.sh and commit pb/", f)
		}
	}
	for _, dir := range []string{"coordinatorpb", "participantpb", "sagapb"} {
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		fresh, _ := filepath.Glob(filepath.Join(out, "pb", dir, "*.go"))
		if len(names) != len(fresh) {
			t.Errorf("pb/%s holds %d files, generate.sh makes %d: run sdk/go/generate.sh", dir, len(names), len(fresh))
		}
	}
}

func TestStubsRoundTripWithTheInstalledRuntime(t *testing.T) {
	req := &cpb.CommitRequest{TxnId: "t1", Begin: true, Participants: []*cpb.Enlistment{{ParticipantId: "p", Payload: []byte("x")}}}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	back := &cpb.CommitRequest{}
	if err := proto.Unmarshal(b, back); err != nil || !proto.Equal(req, back) {
		t.Fatalf("round trip: %v %v", err, back)
	}
	if ppb.VoteValue_VOTE_YES != 1 {
		t.Fatal("VOTE_YES is 1 on the wire")
	}
}

// Every file of proto/ compiles with protoc and the Go generators, as a Go
// program that serves or calls any of its services would need
// (docs/protocol.md, "Compiling the protos").
func TestEveryProtoCompilesForGo(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "proto", "*.proto"))
	if len(files) < 4 {
		t.Fatalf("proto/ holds %d files", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		out := t.TempDir()
		pkg := "verdict/sdk/go/pb/" + name[:len(name)-len(".proto")] + "pb"
		cmd := exec.Command("/usr/bin/protoc", "-I", ".",
			"--plugin=protoc-gen-go=/usr/bin/protoc-gen-go", "--plugin=protoc-gen-go-grpc=/usr/bin/protoc-gen-go-grpc",
			"--go_out="+out, "--go_opt=paths=source_relative", "--go_opt=M"+name+"="+pkg,
			"--go-grpc_out="+out, "--go-grpc_opt=paths=source_relative", "--go-grpc_opt=M"+name+"="+pkg, name)
		cmd.Dir = filepath.Dir(f)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v: %s", name, err, b)
		}
	}
}
