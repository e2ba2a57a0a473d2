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
