"""The Python PostgreSQL resource names transactions exactly as the TypeScript one (vectors from src/participant/postgres-gid.ts)."""

import pytest

from verdict.postgres import gid_of, gid_prefix, parse_gid, parse_payload

VECTORS = [
    ("local", "shop", "T42", "verdict:local:shop:T42"),
    ("local", "shop", "order/17", "verdict:local:shop:order%2F17"),
    ("c1", "p", "é:x y", "verdict:c1:p:%C3%A9%3Ax%20y"),
    ("c" * 60, "p" * 50, "t1", "verdict:#b0d47c39c8bf45ecfb019225034fbac5:t1"),
    ("local", "shop", "x" * 128, "verdict:local:shop:" + "x" * 128),
    ("local", "shop", "a:" * 64, "verdict:local:shop:#21b91584a9ddaf5da9f0ac08c3bd46430db840ce"),
]


@pytest.mark.parametrize("cluster,participant,txn,gid", VECTORS)
def test_gid_matches_the_typescript_resource(cluster: str, participant: str, txn: str, gid: str) -> None:
    prefix = gid_prefix(cluster, participant)
    assert gid_of(prefix, txn) == gid
    assert parse_gid(prefix, gid) == (None if "#" in gid[len(prefix) :] else txn)


def test_foreign_gids_are_not_ours() -> None:
    prefix = gid_prefix("local", "shop")
    assert parse_gid(prefix, "verdict:local:other:T1") is None
    assert parse_gid(prefix, "verdict:local:shop:order%2f17") is None


def test_payload_rules_are_the_typescript_resource_s() -> None:
    assert parse_payload(b"") is None
    assert parse_payload(b'{"sql": ["INSERT INTO t VALUES (1)"]}') == ["INSERT INTO t VALUES (1)"]
    assert isinstance(parse_payload(b'{"sql": [""]}'), str)
    assert isinstance(parse_payload(b'{"other": 1}'), str)
    assert isinstance(parse_payload(b"nope"), str)
