"""The journal: durable, torn tails dropped, corruption refused."""

import os

import pytest

from verdict.journal import Journal, JournalCorrupt


def test_reopened_journal_has_the_latest_state_of_each_transaction(tmp_path) -> None:
    j = Journal(str(tmp_path))
    j.record("t1", "prepared", b"{}")
    j.record("t2", "refused")
    j.record("t1", "committed", b"{}")
    j.close()
    j2 = Journal(str(tmp_path))
    assert {e.txn_id: e.state for e in j2.entries()} == {"t1": "committed", "t2": "refused"}
    # Rewritten with one line per transaction.
    with open(os.path.join(str(tmp_path), Journal.FILE), "rb") as f:
        assert len(f.read().splitlines()) == 2


def test_a_torn_last_write_is_dropped(tmp_path) -> None:
    j = Journal(str(tmp_path))
    j.record("t1", "prepared", b"x")
    j.close()
    with open(os.path.join(str(tmp_path), Journal.FILE), "ab") as f:
        f.write(b"0000abcd {\"t\":\"t2\",")
    j2 = Journal(str(tmp_path))
    assert [(e.txn_id, e.state, e.payload) for e in j2.entries()] == [("t1", "prepared", b"x")]


def test_a_bad_line_before_the_end_is_corruption(tmp_path) -> None:
    j = Journal(str(tmp_path))
    j.record("t1", "prepared")
    j.record("t2", "prepared")
    j.close()
    path = os.path.join(str(tmp_path), Journal.FILE)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[12] ^= 0x01
    with open(path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(JournalCorrupt):
        Journal(str(tmp_path))
