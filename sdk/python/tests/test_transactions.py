"""Client.transactions against fake nodes: each decision group is asked of its own leader, and the lists merge oldest first."""

from typing import Any, Dict, List

import grpc

from verdict import Client
from verdict._proto import coordinator_pb2 as pb
from verdict.groups import GROUP_KEY, group_of

from fake_cluster import FakeNode

G = 4


def ids_of_group(group: int, count: int) -> List[str]:
    found = [f"t-{i}" for i in range(1000) if group_of(f"t-{i}", G) == group]
    return found[:count]


def group_node(ages: Dict[int, Dict[str, int]], leaders: Dict[int, str], seen: List[Any]):
    """A node that leads some groups: it answers a group's listing only with that group's transactions (ages[group])."""

    def h(method: str, request: Any, context: grpc.ServicerContext) -> Any:
        if method == "ClusterStatus":
            return pb.ClusterStatusResponse(cluster_id="c1", group_count=G, groups=[pb.GroupStatus(group=g, leader_address=a) for g, a in leaders.items()])
        group_text = dict(context.invocation_metadata()).get(GROUP_KEY)
        seen.append(group_text)
        g = int(group_text) if group_text is not None else group_of(request.txn_id, G)
        txns = [pb.TxnInfo(txn_id=t, age_ms=a) for t, a in ages.get(g, {}).items() if request.txn_id in ("", t)]
        return pb.ListTransactionsResponse(transactions=txns[: request.limit or 1000])

    return h


def test_each_group_is_asked_of_its_leader_and_the_lists_merge_oldest_first(nodes) -> None:
    ages = {g: {t: 100 * (g + 1) + i for i, t in enumerate(ids_of_group(g, 2))} for g in range(G)}
    seen_a: List[Any] = []
    seen_b: List[Any] = []
    a = FakeNode(lambda m, r, c: handler_a(m, r, c))
    b = FakeNode(lambda m, r, c: handler_b(m, r, c))
    nodes += [a, b]
    leaders = {0: a.address, 1: b.address, 2: a.address, 3: b.address}
    handler_a = group_node({g: ages[g] for g in (0, 2)}, leaders, seen_a)
    handler_b = group_node({g: ages[g] for g in (1, 3)}, leaders, seen_b)
    c = Client([a.address], insecure=True)
    listed = c.transactions()
    assert sorted(seen_a) == ["0", "2"] and sorted(seen_b) == ["1", "3"]
    assert len(listed) == 2 * G
    assert [t.age_ms for t in listed] == sorted((age for g in ages.values() for age in g.values()), reverse=True)
    assert all(t.group == group_of(t.txn_id, G) for t in listed)
    assert {t.group for t in listed} == set(range(G))
    # The limit holds over the merge: the oldest three of all groups, not three per group.
    top = c.transactions(limit=3)
    assert [t.txn_id for t in top] == [t.txn_id for t in listed[:3]]
    # One transaction by id goes to its group's leader alone, without the group metadata.
    one = ids_of_group(1, 1)[0]
    seen_b.clear()
    seen_a.clear()
    r = c.transactions(txn_id=one)
    assert [(t.txn_id, t.group) for t in r] == [(one, 1)]
    assert seen_b == [None] and seen_a == []
    c.close()


def test_a_node_that_reports_no_groups_is_listed_as_one_group(nodes) -> None:
    seen: List[Any] = []

    def h(method: str, request: Any, context: grpc.ServicerContext) -> Any:
        if method == "ClusterStatus":
            return pb.ClusterStatusResponse(cluster_id="c1")
        seen.append(dict(context.invocation_metadata()).get(GROUP_KEY))
        return pb.ListTransactionsResponse(transactions=[pb.TxnInfo(txn_id="t-1", age_ms=5), pb.TxnInfo(txn_id="t-2", age_ms=9)])

    n = FakeNode(h)
    nodes.append(n)
    c = Client([n.address], insecure=True)
    listed = c.transactions(in_flight=True)
    assert seen == [None]
    # The node's own order is kept; every transaction is group 0's.
    assert [(t.txn_id, t.group) for t in listed] == [("t-1", 0), ("t-2", 0)]
    assert [m for m, _ in n.calls] == ["ClusterStatus", "ListTransactions"] and n.calls[1][1].in_flight is True
    c.close()
