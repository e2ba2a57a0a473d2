"""group_of against the vectors pinned in docs/architecture.md ("Decision groups")."""

import pytest

from verdict.groups import group_of, placement_hash

VECTORS = [
    ("t1", 0xC8FD0A82, 1, 3),
    ("t2", 0x4AFE188A, 0, 1),
    ("order-42", 0x2E7B68D7, 0, 0),
    ("saga:payment-7", 0x5509EF8E, 0, 1),
    ("lease:relay", 0xDBF46482, 1, 3),
]


@pytest.mark.parametrize("id,h,g2,g4", VECTORS)
def test_pinned_vectors(id: str, h: int, g2: int, g4: int) -> None:
    assert placement_hash(id) == h
    assert group_of(id, 1) == 0
    assert group_of(id, 2) == g2
    assert group_of(id, 4) == g4


def test_in_range_and_utf8() -> None:
    for g in (1, 2, 3, 4, 7, 64):
        for i in range(500):
            assert 0 <= group_of(f"order-{i}é", g) < g


@pytest.mark.parametrize("bad", [0, -1, 65, 1.5, True, "4"])
def test_bad_counts_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="whole number from 1 to 64"):
        group_of("t1", bad)  # type: ignore[arg-type]


# ---- Routing against a fake cluster of four nodes and four groups, node i leading group i ----

import grpc  # noqa: E402

from verdict import Client  # noqa: E402
from verdict._proto import coordinator_pb2 as pb  # noqa: E402

from fake_cluster import FakeNode, committed  # noqa: E402

G = 4
#: One id per group at G = 4.
ID_OF_GROUP = ["order-42", "t2", "t10", "t1"]


class GroupCluster:
    """Four fake nodes; ``leader_of[g]`` is the node leading group g (a test moves leadership by changing it)."""

    def __init__(self, group_count: int = G) -> None:
        self.leader_of = [0, 1, 2, 3]
        self.nodes = [FakeNode(self._handler(i)) for i in range(G)]
        self.group_count = group_count

    def _handler(self, i: int):
        def h(method, req, ctx):
            if method == "ClusterStatus":
                groups = [pb.GroupStatus(group=g, leader_id=f"n{n}", leader_address=self.nodes[n].address) for g, n in enumerate(self.leader_of)]
                return pb.ClusterStatusResponse(cluster_id="test-cluster", node_id=f"n{i}", group_count=self.group_count, groups=groups)
            if method == "RegisterParticipant":
                return pb.RegisterParticipantResponse(participant=pb.ParticipantInfo(participant_id=req.participant_id))
            ids = list(req.txn_ids) if method == "GetOutcomes" else [req.txn_id]
            g = group_of(ids[0], G)
            leader = self.leader_of[g]
            if leader != i:
                ctx.set_trailing_metadata(
                    (("verdict-reason", "NOT_LEADER"), ("verdict-leader-address", self.nodes[leader].address), ("verdict-leader-id", f"n{leader}"), ("verdict-group", str(g)))
                )
                ctx.abort(grpc.StatusCode.UNAVAILABLE, f"not the leader of group {g}")
            if method == "GetOutcomes":
                # The ids of a group this node does not lead: UNAVAILABLE each, as a node of several groups answers.
                return pb.OutcomesResponse(
                    answers=[
                        pb.OutcomeAnswer(code=0, outcome=pb.TxnOutcome(txn_id=t, outcome=pb.OUTCOME_COMMITTED))
                        if group_of(t, G) == g
                        else pb.OutcomeAnswer(code=grpc.StatusCode.UNAVAILABLE.value[0], details="not the leader of its group")
                        for t in ids
                    ]
                )
            if method == "Begin":
                return pb.BeginResponse(txn_id=req.txn_id)
            return committed(req)

        return h

    def ids(self, i: int, method: str):
        return [req.txn_id for m, req in self.nodes[i].calls if m == method]

    def count(self, i: int, method: str) -> int:
        return sum(1 for m, _ in self.nodes[i].calls if m == method)

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()


@pytest.fixture
def cluster():
    made = []

    def make(group_count: int = G) -> GroupCluster:
        c = GroupCluster(group_count)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


def commit(c: Client, txn_id: str) -> str:
    return c.transaction(txn_id=txn_id).enlist("p").commit().outcome


def test_after_connect_each_transaction_goes_straight_to_its_groups_leader(cluster) -> None:
    gc = cluster()
    c = Client([gc.nodes[0].address], insecure=True)
    assert c.connect().group_count == G and c.connection.groups == G
    for id in ID_OF_GROUP:
        assert commit(c, id) == "COMMITTED"
        assert c.outcome(id).outcome == "COMMITTED"
    for i in range(G):
        assert gc.ids(i, "Commit") == [ID_OF_GROUP[i]]
        assert gc.ids(i, "GetOutcome") == [ID_OF_GROUP[i]]
    assert [gc.count(i, "ClusterStatus") for i in range(G)] == [1, 0, 0, 0]
    c.close()


def test_the_first_refusal_naming_a_group_teaches_the_groups(cluster) -> None:
    gc = cluster()
    c = Client([gc.nodes[0].address], insecure=True)
    assert commit(c, "t1") == "COMMITTED"  # group 3's: node 0 refuses naming node 3 and group 3
    assert gc.ids(0, "Commit") == ["t1"] and gc.count(0, "ClusterStatus") == 1 and gc.ids(3, "Commit") == ["t1"]
    # The refused attempt did nothing: the retry at the group's leader still begins the transaction (R2).
    assert [req.begin for m, req in gc.nodes[3].calls if m == "Commit"] == [True]
    assert commit(c, "t2") == "COMMITTED" and commit(c, "t10") == "COMMITTED"
    assert gc.ids(1, "Commit") == ["t2"] and gc.ids(2, "Commit") == ["t10"] and gc.ids(0, "Commit") == ["t1"]
    assert [gc.count(i, "ClusterStatus") for i in range(G)] == [1, 0, 0, 0]
    c.close()


def test_a_stale_hint_of_one_group_is_corrected_by_its_redirect(cluster) -> None:
    gc = cluster()
    c = Client([gc.nodes[0].address], insecure=True)
    c.connect()
    gc.leader_of[1] = 2  # group 1's leadership moves from node 1 to node 2
    assert commit(c, "t2") == "COMMITTED"
    assert gc.ids(1, "Commit") == ["t2"] and gc.ids(2, "Commit") == ["t2"]
    assert group_of("t3", G) == 1
    assert commit(c, "t3") == "COMMITTED" and commit(c, "t1") == "COMMITTED"
    assert gc.ids(1, "Commit") == ["t2"] and gc.ids(2, "Commit") == ["t2", "t3"] and gc.ids(3, "Commit") == ["t1"]
    assert [gc.count(i, "ClusterStatus") for i in range(G)] == [1, 0, 0, 0]
    c.close()


def test_a_cluster_before_groups_is_one_group(cluster) -> None:
    gc = cluster(group_count=0)
    c = Client([gc.nodes[0].address], insecure=True)
    c.connect()
    assert c.connection.groups == 1 and c.connection.groups_known
    c.close()


def test_a_participant_in_doubt_asks_each_groups_leader_for_its_ids(cluster, tmp_path) -> None:
    import time

    from verdict import Engine, Journal, MemoryResource, Participant

    gc = cluster()
    e = Engine("c1", "shop", Journal(str(tmp_path)), MemoryResource(), lambda *a, **k: None)
    asked = ["order-42", "t2", "t10", "t1", "t3"]
    for t in asked:
        e.prepare("c1", t, "shop", b'{"set":{"%s":1}}' % t.encode())
    e.journal.close()
    r = MemoryResource()
    p = Participant(participant_id="shop", cluster_id="c1", nodes=[n.address for n in gc.nodes], data_dir=str(tmp_path), resource=r, endpoint="127.0.0.1:0", insecure=True, log=lambda *a, **k: None)
    try:
        p.start()
        deadline = time.monotonic() + 15
        while p.engine.in_doubt() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.engine.in_doubt() == [] and sorted(r.values) == sorted(asked)
        assert p.client.connection.groups == G
        # After the first question (all ids, at node 0, which answered its own), each group's ids went to its own leader.
        # An id that falls due alone is asked with GetOutcome, at its group's leader too.
        for i in range(G):
            singles = [req.txn_id for m, req in gc.nodes[i].calls if m == "GetOutcome" and group_of(req.txn_id, G) == i]
            got = [t for m, req in gc.nodes[i].calls if m == "GetOutcomes" for t in req.txn_ids if group_of(t, G) == i] + singles
            assert got, f"node {i} was never asked about its group's ids"
            later = [list(req.txn_ids) for m, req in gc.nodes[i].calls if m == "GetOutcomes"][1 if i == 0 else 0 :]
            assert all(group_of(t, G) == i for ids in later for t in ids)
    finally:
        p.stop()
