#!/bin/sh
# Generates the Go stubs of proto/coordinator.proto, proto/participant.proto
# and proto/saga.proto into pb/coordinatorpb, pb/participantpb and pb/sagapb
# (or under the directory given as $1), with Debian's protoc, protoc-gen-go
# and protoc-gen-go-grpc (packages protobuf-compiler, protoc-gen-go,
# protoc-gen-go-grpc). The stubs are checked
# in; stubs_test.go regenerates them into a temporary directory and fails when
# they differ, so run this after changing a .proto file.
#
# The .proto files carry no go_package option: the Go package of each file is
# given here (protoc's M flags), so proto/ stays the same for every language.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-"$here"}
protoc=${PROTOC:-/usr/bin/protoc}
module=verdict/sdk/go
for name in coordinator participant saga; do
  mkdir -p "$out/pb/${name}pb"
  "$protoc" -I "$root/proto" \
    --plugin=protoc-gen-go="${PROTOC_GEN_GO:-/usr/bin/protoc-gen-go}" \
    --plugin=protoc-gen-go-grpc="${PROTOC_GEN_GO_GRPC:-/usr/bin/protoc-gen-go-grpc}" \
    --go_out="$out/pb/${name}pb" --go_opt=paths=source_relative --go_opt="M$name.proto=$module/pb/${name}pb" \
    --go-grpc_out="$out/pb/${name}pb" --go-grpc_opt=paths=source_relative --go-grpc_opt="M$name.proto=$module/pb/${name}pb" \
    "$root/proto/$name.proto"
done
