"""TLS on both sides, with throwaway certificates made by openssl: the
participant takes calls only from a node's certificate of its cluster (the
node mark, R8), and the client talks TLS to a node with TlsFiles."""

from __future__ import annotations

import os
import subprocess
from concurrent import futures
from typing import Dict

import grpc
import pytest

from verdict import Client, Engine, Journal, MemoryResource, TlsFiles, VerdictError
from verdict._proto import coordinator_pb2 as cpb
from verdict._proto import participant_pb2 as ppb
from verdict._proto import participant_pb2_grpc
from verdict.participant import _Servicer

from fake_cluster import FakeNode, answering, committed

SUBJECTS = {
    "n1": "/O=verdict-node/OU=c1/CN=n1",
    "shop": "/OU=c1/CN=shop",
    "other-node": "/O=verdict-node/OU=c2/CN=n1",
    # A participant certificate whose CN spells a node mark: one field, not a mark.
    "sly": "/OU=c1/CN=x,O=verdict-node",
    # A node certificate of the cluster for a node it does not have.
    "n9": "/O=verdict-node/OU=c1/CN=n9",
}


def _openssl(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Dict[str, TlsFiles]:
    d = str(tmp_path_factory.mktemp("tls"))
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    _openssl("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=verdict-test-ca", "-days", "1", cwd=d)
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    out = {}
    for name, subject in SUBJECTS.items():
        _openssl("req", *curve, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{name}.pem", "-days", "1", "-extfile", "ext", cwd=d)
        out[name] = TlsFiles(os.path.join(d, "ca.pem"), os.path.join(d, f"{name}.pem"), os.path.join(d, f"{name}.key"))
    return out


def _server_credentials(files: TlsFiles) -> grpc.ServerCredentials:
    ca, cert, key = files.read()
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=True)


def test_r8_the_participant_takes_prepare_only_from_a_node_of_its_cluster(certs, tmp_path) -> None:
    engine = Engine("c1", "shop", Journal(str(tmp_path)), MemoryResource(), lambda *a, **k: None)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    participant_pb2_grpc.add_ParticipantServicer_to_server(_Servicer(engine, node_only=True), server)
    port = server.add_secure_port("127.0.0.1:0", _server_credentials(certs["shop"]))
    server.start()
    try:
        answers = {}
        for who in ("n1", "shop", "other-node", "sly"):
            ca, cert, key = certs[who].read()
            with grpc.secure_channel(f"127.0.0.1:{port}", grpc.ssl_channel_credentials(ca, key, cert)) as ch:
                try:
                    v = participant_pb2_grpc.ParticipantStub(ch).Prepare(ppb.PrepareRequest(cluster_id="c1", txn_id=f"t-{who}", participant_id="shop"), timeout=5)
                    answers[who] = ppb.VoteValue.Name(v.vote)
                except grpc.RpcError as err:
                    answers[who] = err.code().name
        assert answers == {"n1": "VOTE_YES", "shop": "PERMISSION_DENIED", "other-node": "PERMISSION_DENIED", "sly": "PERMISSION_DENIED"}
        # Refused callers changed nothing.
        assert engine.journal.get("t-shop") is None
    finally:
        server.stop(0).wait()


def test_the_client_talks_tls_with_its_certificate(certs) -> None:
    node = FakeNode(answering({"Commit": committed}), _server_credentials(certs["n1"]))
    try:
        with Client([node.address], tls=certs["shop"]) as c:
            assert c.transaction(txn_id="tls-1").enlist("p").commit().outcome == "COMMITTED"
        # A plaintext client gets no answer from a TLS node.
        with Client([node.address], insecure=True, call_timeout_ms=500) as c:
            with pytest.raises(Exception):
                c.outcome("tls-1")
        assert isinstance(node.calls[0][1], cpb.CommitRequest)
    finally:
        node.stop()


@pytest.mark.parametrize("served,cluster_id,answered", [("n1", "c1", True), ("n1", None, True), ("shop", None, False), ("other-node", "c1", False), ("sly", None, False)])
def test_r8_the_client_calls_only_a_server_with_a_node_certificate(certs, served: str, cluster_id, answered: bool) -> None:
    node = FakeNode(answering({"GetOutcome": committed}), _server_credentials(certs[served]))
    try:
        with Client([node.address], tls=certs["shop"], cluster_id=cluster_id, call_timeout_ms=1_000) as c:
            if answered:
                assert c.outcome("t1").outcome == "COMMITTED"
            else:
                with pytest.raises(VerdictError) as e:
                    c.outcome("t1")
                assert "node" in e.value.reason
        # Refused before anything was sent.
        assert len(node.calls) == (1 if answered else 0)
    finally:
        node.stop()


class _St:
    def __init__(self, cluster_id: str, node_id: str, peers=()) -> None:
        self.cluster_id, self.node_id = cluster_id, node_id
        self.peers = [type("Peer", (), {"node_id": p})() for p in peers]


def test_r8_the_members_are_believed_from_a_majority_of_the_configured_endpoints() -> None:
    from verdict.callers import members_by_majority

    answers = {"a:1": _St("c1", "n1", ["n2", "n3"]), "b:1": _St("c1", "n2", ["n1", "n3"]), "c:1": RuntimeError("down")}

    def ask(address: str):
        a = answers[address]
        if isinstance(a, Exception):
            raise a
        return a

    assert members_by_majority("c1", ["a:1", "b:1", "c:1"], ask) == ["n1", "n2", "n3"]
    # One endpoint alone naming other nodes is not believed; a node of another cluster does not count.
    answers["b:1"] = _St("c1", "n9", ["n8"])
    with pytest.raises(RuntimeError, match="do not agree"):
        members_by_majority("c1", ["a:1", "b:1", "c:1"], ask)
    answers["b:1"] = _St("c2", "n1", ["n2", "n3"])
    with pytest.raises(RuntimeError, match="fewer than a majority"):
        members_by_majority("c1", ["a:1", "b:1", "c:1"], ask)


def test_r8_a_node_certificate_must_name_a_current_member_learned_at_most_once_a_second() -> None:
    from verdict.callers import NodeCallers

    now = [100.0]
    members = [["n1", "n2"]]
    fetches = []

    def fetch():
        fetches.append(now[0])
        return members[0]

    callers = NodeCallers(lambda: "c1", fetch, lambda *a, **k: None, clock=lambda: now[0])
    callers.refresh()
    assert callers.problem("CN=n1,OU=c1,O=verdict-node") is None
    # A node certificate of the cluster naming a node it does not have (made for a node not added, or removed): refused.
    now[0] += 1.0
    why = callers.problem("CN=n4,OU=c1,O=verdict-node")
    assert why is not None and "names no node of cluster" in why and "n1, n2" in why
    # It made the participant ask once; asking again within the second is refused without a question.
    assert len(fetches) == 2
    assert callers.problem("CN=n4,OU=c1,O=verdict-node") is not None and len(fetches) == 2
    # n4 added to the cluster: learned on the next question a second later.
    members[0] = ["n1", "n2", "n4"]
    now[0] += 1.0
    assert callers.problem("CN=n4,OU=c1,O=verdict-node") is None and len(fetches) == 3
    # n2 removed: refused once the members are learned again.
    members[0] = ["n1", "n4"]
    callers.refresh()
    assert callers.problem("CN=n2,OU=c1,O=verdict-node") is not None
    # The kinds that are no node are refused by the mark, whatever their name, without asking the cluster.
    before = len(fetches)
    for subject in ("CN=n1", "CN=n1,OU=c1", "CN=n1,OU=c2,O=verdict-node"):
        assert callers.problem(subject) is not None
    assert len(fetches) == before and callers.refused == 6


def test_r8_the_participant_and_the_step_service_take_calls_only_from_a_current_member(certs, tmp_path) -> None:
    from verdict import Participant
    from verdict._proto import raft_pb2
    from verdict._proto import saga_pb2 as spb
    from verdict._proto import saga_pb2_grpc
    from verdict.saga import StepDone, StepService

    quiet = lambda *a, **k: None  # noqa: E731
    node = FakeNode(
        answering(
            {
                "RegisterParticipant": lambda req: cpb.RegisterParticipantResponse(participant=cpb.ParticipantInfo(participant_id=req.participant_id)),
                "Status": lambda req: raft_pb2.NodeStatus(cluster_id="c1", node_id="n1", peers=[raft_pb2.PeerStatus(node_id="n2")]),
            }
        ),
        _server_credentials(certs["n1"]),
    )
    p = Participant(participant_id="shop", cluster_id="c1", nodes=[node.address], data_dir=str(tmp_path / "p"), resource=MemoryResource(), endpoint="127.0.0.1:0", tls=certs["shop"], log=quiet)
    svc = StepService(
        service_id="shop",
        nodes=[node.address],
        cluster_id="c1",
        data_dir=str(tmp_path / "s"),
        handlers={"charge": (lambda r: StepDone("charged"), lambda r: StepDone("refunded"))},
        endpoint="127.0.0.1:0",
        tls=certs["shop"],
        log=quiet,
    )
    try:
        p.start()
        svc.start()
        assert p.callers is not None and p.callers.known() == ["n1", "n2"]
        answers = {}
        for who in ("n1", "n9", "shop", "other-node"):
            ca, cert, key = certs[who].read()
            creds = grpc.ssl_channel_credentials(ca, key, cert)
            with grpc.secure_channel(f"127.0.0.1:{p.port}", creds) as ch:
                try:
                    participant_pb2_grpc.ParticipantStub(ch).Prepare(ppb.PrepareRequest(cluster_id="c1", txn_id=f"t-{who}", participant_id="shop", payload=b"{}"), timeout=10)
                    prepare = "OK"
                except grpc.RpcError as err:
                    prepare = f"{err.code().name}: {err.details()}"
            with grpc.secure_channel(f"127.0.0.1:{svc.port}", creds) as ch:
                try:
                    saga_pb2_grpc.SagaStepStub(ch).Execute(spb.StepRequest(cluster_id="c1", saga_id=f"s-{who}", step=0, key=f"s-{who}/0/action", name="charge"), timeout=10)
                    step = "OK"
                except grpc.RpcError as err:
                    step = f"{err.code().name}: {err.details()}"
            answers[who] = (prepare, step)
        assert answers["n1"] == ("OK", "OK")
        for who in ("n9", "shop", "other-node"):
            assert all(a.startswith("PERMISSION_DENIED") for a in answers[who]), (who, answers[who])
        assert "CN=n9 names no node of cluster" in answers["n9"][0] and "(its nodes: n1, n2)" in answers["n9"][0]
        assert "names no node" in answers["n9"][1]
        assert p.journal.get("t-n9") is None and svc.inbox.get("s-n9/0/action") is None
    finally:
        svc.stop()
        p.stop()
        node.stop()
