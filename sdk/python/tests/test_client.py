"""The client against fake nodes: leader following, the begin rule (R2), OutcomeUnknownError, plaintext only when said."""

import grpc
import pytest

from verdict import Client, OutcomeUnknownError, VerdictError
from verdict._proto import coordinator_pb2 as pb
from verdict.retry import Backoff

from fake_cluster import FakeNode, answering, committed, not_leader


def test_plaintext_only_when_said() -> None:
    with pytest.raises(VerdictError) as e:
        Client(["127.0.0.1:1"])
    assert e.value.code == "INVALID_ARGUMENT" and "insecure=True" in e.value.reason


def test_a_follower_names_the_leader_and_the_commit_goes_there(nodes) -> None:
    leader = FakeNode(answering({"Commit": committed}))
    follower = FakeNode(not_leader(leader.address))
    nodes += [leader, follower]
    c = Client([follower.address], insecure=True)
    tx = c.transaction(txn_id="t1").enlist("shop", {"set": {"k": "v"}})
    r = tx.commit()
    assert (r.outcome, r.decision_index) == ("COMMITTED", 7)
    assert [m for m, _ in follower.calls] == ["Commit"] and [m for m, _ in leader.calls] == ["Commit"]
    # A NOT_LEADER attempt did nothing: the retry still begins the transaction.
    assert leader.calls[0][1].begin is True
    assert leader.calls[0][1].participants[0].payload == b'{"set":{"k":"v"}}'
    # The next call goes to the leader first.
    assert c.connection.leader_address == leader.address
    c.close()


def test_r2_a_retry_after_an_attempt_that_may_have_acted_does_not_begin(nodes) -> None:
    def flaky(method, req, ctx):
        if len(n1.calls) == 1:
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "stream cut")  # no verdict-reason: may have acted
        return committed(req)

    n1 = FakeNode(flaky)
    nodes.append(n1)
    c = Client([n1.address], insecure=True, backoff=Backoff(initial_ms=1, max_ms=2))
    assert c.transaction(txn_id="t2").enlist("p").commit().outcome == "COMMITTED"
    assert [req.begin for _, req in n1.calls] == [True, False]
    c.close()


def test_a_lost_commit_answer_is_outcome_unknown_never_a_guess(nodes) -> None:
    n1 = FakeNode(lambda m, req, ctx: ctx.abort(grpc.StatusCode.UNAVAILABLE, "lost"))
    nodes.append(n1)
    c = Client([n1.address], insecure=True, call_timeout_ms=300)
    with pytest.raises(OutcomeUnknownError) as e:
        c.transaction(txn_id="t3").enlist("p").commit()
    assert e.value.txn_id == "t3"
    # In progress is not an outcome either.
    n1.handler = lambda m, req, ctx: pb.TxnOutcome(txn_id=req.txn_id, outcome=pb.OUTCOME_IN_PROGRESS)
    with pytest.raises(OutcomeUnknownError):
        c.transaction(txn_id="t4").enlist("p").commit()
    c.close()


def test_a_refusal_surfaces_at_once_with_its_reason(nodes) -> None:
    def refuse(m, req, ctx):
        ctx.set_trailing_metadata((("verdict-reason", "ALREADY_DECIDED"), ("verdict-outcome", "ABORTED")))
        ctx.abort(grpc.StatusCode.ALREADY_EXISTS, "t5 was decided")

    n1 = FakeNode(refuse)
    nodes.append(n1)
    c = Client([n1.address], insecure=True)
    with pytest.raises(VerdictError) as e:
        c.transaction(txn_id="t5").enlist("p").commit()
    assert e.value.code == "ALREADY_EXISTS" and e.value.details.recorded_outcome == "ABORTED"
    assert len(n1.calls) == 1
    c.close()


def test_abort_before_commit_sends_nothing_and_enlist_checks_ids() -> None:
    c = Client(["127.0.0.1:1"], insecure=True)
    tx = c.transaction(txn_id="t6")
    with pytest.raises(VerdictError):
        tx.enlist("-bad")
    assert tx.abort("changed my mind").outcome == "ABORTED"
    with pytest.raises(VerdictError):
        c.transaction(txn_id="bad id")
    c.close()


def test_local_cluster_tls_finds_npm_start_s_files_where_the_typescript_sdk_does(tmp_path) -> None:
    from verdict import local_cluster_tls

    d = tmp_path / "verdict" / "local"
    d.mkdir(parents=True)
    for f in ("ca.crt", "alice.crt", "alice.key"):
        (d / f).write_text("x")
    files = local_cluster_tls(env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert (files.ca, files.cert, files.key) == (str(d / "ca.crt"), str(d / "alice.crt"), str(d / "alice.key"))
    assert local_cluster_tls(env={"VERDICT_CONFIG_DIR": str(tmp_path / "verdict")}).cert == str(d / "alice.crt")
    with pytest.raises(VerdictError) as e:
        local_cluster_tls("bob", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert "verdict certs --client bob" in e.value.reason
