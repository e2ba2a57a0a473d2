"""Tests of the Python SDK that need a real PostgreSQL: run by
test/pg/python-pg-pytest.test.ts, which starts one and gives its URL in
VERDICT_TEST_PG_URL (a database each test may fill). Without it they are not
collected (`python3 -m pytest` in sdk/python runs tests/ only)."""

import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

PG_URL = os.environ.get("VERDICT_TEST_PG_URL", "")
# Listed without a database too (the wrapper lists them before it starts one); never run without one.
if PG_URL == "" and os.environ.get("VERDICT_TEST_LISTING", "") == "":
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture
def pg_url() -> str:
    return PG_URL


@pytest.fixture
def unique() -> str:
    """A name no other test uses (saga ids, participant ids, table suffixes)."""
    return uuid.uuid4().hex[:10]
