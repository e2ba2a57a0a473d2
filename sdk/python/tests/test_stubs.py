"""The checked-in stubs are what generate.sh makes from proto/ today."""

import filecmp
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)


def test_checked_in_stubs_match_proto() -> None:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["sh", os.path.join(SDK, "generate.sh"), out], check=True)
        checked_in = os.path.join(SDK, "verdict", "_proto")
        names = sorted(n for n in os.listdir(out) if n.endswith(".py"))
        assert names == sorted(n for n in os.listdir(checked_in) if n.endswith(".py")), "stub files differ: run sdk/python/generate.sh"
        _, mismatch, errors = filecmp.cmpfiles(out, checked_in, names, shallow=False)
        assert mismatch == [] and errors == [], f"stale stubs {mismatch + errors}: run sdk/python/generate.sh and commit verdict/_proto"


def test_stubs_load_with_the_installed_protobuf_runtime() -> None:
    from verdict._proto import coordinator_pb2, participant_pb2

    req = coordinator_pb2.CommitRequest(txn_id="t1", begin=True, participants=[coordinator_pb2.Enlistment(participant_id="p", payload=b"x")])
    assert coordinator_pb2.CommitRequest.FromString(req.SerializeToString()) == req
    assert participant_pb2.VOTE_YES == 1
