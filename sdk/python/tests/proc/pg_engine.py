"""The Python side of test/pg/python-postgres.test.ts: the participant engine
over a PostgresResource on a real PostgreSQL, in steps the test runs as
separate processes (so a step's end is a crash: nothing is rolled back or
closed on the way out). Prints one JSON line."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from verdict import Engine, Journal  # noqa: E402
from verdict.postgres import PostgresConfigError, PostgresResource  # noqa: E402


def quiet(*_a: object, **_k: object) -> None:
    pass


def main() -> int:
    url, cluster, data_dir, step = sys.argv[1:5]
    try:
        resource = PostgresResource(url, cluster, "shop")
    except PostgresConfigError as err:
        print(json.dumps({"refused": str(err)}))
        return 0
    engine = Engine(cluster, "shop", Journal(data_dir), resource, quiet)
    out: dict = {}
    if step == "prepare":
        ins = lambda t, n: json.dumps({"sql": [f"INSERT INTO orders VALUES ('{t}', {n})"]}).encode()  # noqa: E731
        out["t1"] = engine.prepare(cluster, "t1", "shop", ins("t1", 10))
        out["t2"] = engine.prepare(cluster, "t2", "shop", ins("t2", 20))
        # Work done in-process through work(), then prepared with an empty payload.
        cur = resource.work("t4")
        cur.execute("INSERT INTO orders VALUES ('t4', 40)")
        out["t4"] = engine.prepare(cluster, "t4", "shop", b"")
        # A NO vote: a constraint fails, nothing stays prepared.
        out["t5"] = engine.prepare(cluster, "t5", "shop", json.dumps({"sql": ["INSERT INTO orders VALUES ('t5', NULL)"]}).encode())
        # A statement that waits on a lock a prepared transaction holds (t1's key): bounded by the PREPARE's budget, a NO vote.
        out["t6"] = engine.prepare(cluster, "t6", "shop", ins("t1", 60), timeout_ms=500)
        # A crash between PostgreSQL's PREPARE and the journal's record: prepared in PostgreSQL only, never voted.
        out["t3"] = resource.prepare("t3", ins("t3", 30))
        out["gids"] = {t: resource.gid(t) for t in ("t1", "t2", "t3", "t4")}
    elif step == "recover":
        # What a restarted participant resolves with the cluster: its journal's prepared ones and PostgreSQL's.
        out["in_doubt"] = sorted(engine.due(float("inf")))
        out["prepared_here"] = sorted(resource.prepared_here())
        # The cluster's answers: t1 and t4 committed (YES from everyone), t2 aborted, t3 aborted (no YES was ever given: R3).
        engine.decide(cluster, "t1", "shop", True)
        engine.decide(cluster, "t4", "shop", True)
        engine.decide(cluster, "t2", "shop", False)
        engine.decide(cluster, "t3", "shop", False)
        # Redelivered decisions: acknowledged again, nothing applied twice (R7).
        engine.decide(cluster, "t1", "shop", True)
        engine.decide(cluster, "t2", "shop", False)
        out["after"] = sorted(resource.prepared_here())
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
