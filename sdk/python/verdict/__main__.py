"""``python3 -m verdict participant ...``: a memory participant as a process.

    python3 -m verdict participant --id shop --nodes 127.0.0.1:7001,127.0.0.1:7002 \\
        --data-dir /var/lib/shop --listen 127.0.0.1:7101 --insecure

Prints one JSON line on stdout once registered ({"participant_id", "endpoint"}),
then logs JSON lines on stderr; SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import List, Optional

from .connection import TlsFiles
from .participant import Participant
from .resource import MemoryResource


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m verdict")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("participant", help="run a memory participant")
    p.add_argument("--id", required=True)
    p.add_argument("--nodes", required=True, help="node addresses, host:port,...")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--listen", required=True, help="host:port to serve on (port 0: any free port)")
    p.add_argument("--endpoint", help="the address nodes dial, when not --listen")
    p.add_argument("--cluster-id")
    p.add_argument("--ca")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--insecure", action="store_true", help="plaintext, chosen knowingly")
    a = ap.parse_args(argv)
    tls = TlsFiles(a.ca, a.cert, a.key) if a.ca or a.cert or a.key else None
    part = Participant(
        participant_id=a.id,
        nodes=a.nodes.split(","),
        data_dir=a.data_dir,
        resource=MemoryResource(),
        endpoint=a.endpoint or a.listen,
        listen=a.listen,
        cluster_id=a.cluster_id,
        tls=tls,
        insecure=a.insecure,
    ).start()
    print(json.dumps({"participant_id": a.id, "endpoint": part.endpoint}), flush=True)
    done = threading.Event()
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, lambda *_: done.set())
    done.wait()
    part.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
