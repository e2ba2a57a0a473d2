"""Fake Coordinator nodes on loopback for the SDK's unit tests: each answers by a handler the test gives."""

from __future__ import annotations

from concurrent import futures
from typing import Any, Callable, Dict, List, Optional, Tuple

import grpc

from verdict._proto import coordinator_pb2 as pb
from verdict._proto import coordinator_pb2_grpc, raft_pb2_grpc

Handler = Callable[[str, Any, grpc.ServicerContext], Any]


class FakeNode(coordinator_pb2_grpc.CoordinatorServicer):
    def __init__(self, handler: Handler, credentials: Optional[grpc.ServerCredentials] = None) -> None:
        self.handler = handler
        self.calls: List[Tuple[str, Any]] = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        coordinator_pb2_grpc.add_CoordinatorServicer_to_server(self, self.server)
        # RaftNode.Status too (a participant under TLS learns the members from it), answered by the handler as "Status".
        raft_pb2_grpc.add_RaftNodeServicer_to_server(_RaftNode(self), self.server)
        self.port = self.server.add_secure_port("127.0.0.1:0", credentials) if credentials is not None else self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"
        self.server.start()

    def _on(self, method: str, request: Any, context: grpc.ServicerContext) -> Any:
        self.calls.append((method, request))
        return self.handler(method, request, context)

    def stop(self) -> None:
        self.server.stop(0).wait()


class _RaftNode(raft_pb2_grpc.RaftNodeServicer):
    def __init__(self, node: FakeNode) -> None:
        self.node = node

    def Status(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802 - the gRPC method's name
        return self.node._on("Status", request, context)


for _m in ["RegisterParticipant", "Begin", "Commit", "Abort", "GetOutcome", "GetOutcomes", "ClusterStatus", "ListParticipants", "ListTransactions"]:
    setattr(FakeNode, _m, (lambda m: lambda self, req, ctx: self._on(m, req, ctx))(_m))


def not_leader(leader_address: str) -> Handler:
    """A follower: UNAVAILABLE, NOT_LEADER, naming the leader."""

    def h(method: str, request: Any, context: grpc.ServicerContext) -> Any:
        context.set_trailing_metadata((("verdict-reason", "NOT_LEADER"), ("verdict-leader-address", leader_address), ("verdict-leader-id", "n2")))
        context.abort(grpc.StatusCode.UNAVAILABLE, "not the leader")

    return h


def answering(answers: Dict[str, Callable[[Any], Any]]) -> Handler:
    def h(method: str, request: Any, context: grpc.ServicerContext) -> Any:
        f: Optional[Callable[[Any], Any]] = answers.get(method)
        if f is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, method)
        return f(request)

    return h


def committed(req: Any) -> pb.TxnOutcome:
    return pb.TxnOutcome(txn_id=req.txn_id, outcome=pb.OUTCOME_COMMITTED, decision_index=7)
