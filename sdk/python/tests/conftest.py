import os
import sys

import pytest

# The package is imported from the source tree, as the process tests run it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
collect_ignore = ["proc"]


@pytest.fixture
def nodes():
    """Fake nodes a test starts (tests/fake_cluster.py FakeNode), appended here: each is stopped after the test."""
    made = []
    yield made
    for n in made:
        n.stop()
