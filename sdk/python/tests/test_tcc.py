"""TCC over memory: the barrier's rule, its durability, and the engine with a TCC resource."""

import itertools
import os
import time

import pytest

from verdict import Engine, Journal
from verdict.tcc import CANCELLED, CONFIRMED, EMPTY_CANCELLED, LOG_FILE, TRIED, BarrierRefusal, KeyValueHandlers, MemoryTccResource, barrier_step

C, P = "c1", "seats"


def quiet(*_a, **_k) -> None:
    pass


def kv(path: str) -> MemoryTccResource:
    return MemoryTccResource(path, P, KeyValueHandlers())


def test_the_barrier_rule_is_the_table_of_docs_tcc_md() -> None:
    table = {
        None: {"try": ("run", TRIED), "confirm": ("refuse", None), "cancel": ("record", EMPTY_CANCELLED)},
        TRIED: {"try": ("done", None), "confirm": ("run", CONFIRMED), "cancel": ("run", CANCELLED)},
        CONFIRMED: {"try": ("done", None), "confirm": ("done", None), "cancel": ("refuse", None)},
        CANCELLED: {"try": ("refuse-try", None), "confirm": ("refuse", None), "cancel": ("done", None)},
        EMPTY_CANCELLED: {"try": ("refuse-try", None), "confirm": ("refuse", None), "cancel": ("done", None)},
    }
    for recorded, row in table.items():
        for message, expected in row.items():
            assert barrier_step(recorded, message) == expected, (recorded, message)


def test_every_order_of_up_to_four_messages_runs_each_handler_at_most_once_and_never_a_hanging_try(tmp_path) -> None:
    for n in range(1, 5):
        for i, seq in enumerate(itertools.product(["try", "confirm", "cancel"], repeat=n)):
            r = kv(str(tmp_path / f"{n}-{i}"))
            for m in seq:
                try:
                    {"try": lambda: r.prepare("t", b'{"set":{"k":"v"}}'), "confirm": lambda: r.commit("t"), "cancel": lambda: r.rollback("t")}[m]()
                except BarrierRefusal:
                    pass
            state = r.branch_state("t")
            # A Cancel before any Try leaves nothing reserved, whatever came after.
            first_try = seq.index("try") if "try" in seq else None
            if "cancel" in seq and (first_try is None or seq.index("cancel") < first_try):
                assert state in (EMPTY_CANCELLED,) and r.state["held"] == {}, seq
            # Confirmed exactly when a Try came first and a Confirm before any Cancel.
            assert (r.state["values"] == {"k": "v"}) == (state == CONFIRMED), seq
            r.close()


def test_an_empty_rollback_refuses_the_late_try_even_after_a_restart(tmp_path) -> None:
    r = kv(str(tmp_path))
    r.rollback("t1")  # the Cancel came first: an empty rollback
    r.close()
    r = kv(str(tmp_path))
    assert "hanging Try is refused" in (r.prepare("t1", b'{"set":{"k":"v"}}') or "")
    assert r.state["held"] == {} and r.branch_state("t1") == EMPTY_CANCELLED


def test_the_state_is_rebuilt_by_replaying_the_handlers_and_a_torn_last_line_is_dropped(tmp_path) -> None:
    r = kv(str(tmp_path))
    assert r.prepare("t1", b'{"set":{"a":"1"}}') is None
    r.commit("t1")
    r.commit("t1")  # a redelivered Confirm runs nothing
    assert r.prepare("t2", b'{"set":{"a":"2"}}') is None
    assert r.prepare("t3", b'{"set":{"b":"3"}}') is None
    r.rollback("t3")
    r.close()
    with open(tmp_path / LOG_FILE, "ab") as f:
        f.write(b'0000abcd {"t":"t4","s":"tri')  # a crash in the middle of a line
    r = kv(str(tmp_path))
    assert r.state == {"values": {"a": "1"}, "held": {"t2": {"a": "2"}}}
    assert list(r.prepared_here()) == ["t2"] and r.branch_state("t4") is None
    with pytest.raises(BarrierRefusal):
        r.rollback("t1")  # a Cancel after the Confirm contradicts it
    r.close()


def test_a_damaged_line_before_the_end_stops_the_start(tmp_path) -> None:
    r = kv(str(tmp_path))
    assert r.prepare("t1", b'{"set":{"a":"1"}}') is None
    assert r.prepare("t2", b'{"set":{"b":"1"}}') is None
    r.close()
    data = (tmp_path / LOG_FILE).read_bytes()
    (tmp_path / LOG_FILE).write_bytes(data.replace(b"t1", b"t9", 1))
    with pytest.raises(ValueError, match="line 1 is damaged"):
        kv(str(tmp_path))


def test_the_engine_over_tcc_votes_yes_after_the_try_is_durable_and_confirms_after_a_restart(tmp_path) -> None:
    data = str(tmp_path)
    e = Engine(C, P, Journal(data), kv(data), quiet)
    assert e.prepare(C, "t1", P, b'{"set":{"seat-1":"alice"}}') == (True, "")
    # The same seat is reserved: a second Try votes NO with the handler's reason.
    yes, reason = e.prepare(C, "t2", P, b'{"set":{"seat-1":"bob"}}')
    assert not yes and "reserved by t1" in reason
    e.resource.close()
    e.journal.close()
    e2 = Engine(C, P, Journal(data), kv(data), quiet)
    assert e2.in_doubt() == ["t1"] and e2.due(time.monotonic()) == ["t1"]
    e2.decide(C, "t1", P, True)
    assert e2.resource.state["values"] == {"seat-1": "alice"} and e2.resource.state["held"] == {}
    # An ABORT before its PREPARE: an empty rollback, and the PREPARE after it gets NO.
    e2.decide(C, "t3", P, False)
    assert e2.prepare(C, "t3", P, b'{"set":{"seat-2":"carol"}}')[0] is False
    assert e2.resource.branch_state("t3") == EMPTY_CANCELLED
    assert os.path.exists(os.path.join(data, LOG_FILE))
