"""Several replicas of app.py behind HAProxy, on this machine: for a school, and for the tests.

    python -m deploy.replicas                 # 2 replicas on :7861, :7862; HAProxy on :7860
    python -m deploy.replicas -n 4 --port 8000 --host 0.0.0.0

Each replica is `python app.py` with HOST/PORT of its own, EXPLORER_REPLICA=r1, r2, ... (the
name GET /explorer/replica answers, explorer/web/replica.py) and EXPLORER_TRUST_PROXY=1 (the
visitor's address is the one HAProxy forwards). HAProxy runs deploy/haproxy.cfg with its
"BEGIN"/"END" blocks rewritten for the address served and the replicas (render_config), in the
foreground; Ctrl-C (or SIGTERM) stops HAProxy and every replica. Other environment variables
reach every replica unchanged (EXPLORER_MAX_BATCH, EXPLORER_WARM, ...). `haproxy` must be
installed (Debian: apt-get install haproxy). docs/SCALING.md, "Several replicas, one class".
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
CONFIG = Path(__file__).resolve().parent / "haproxy.cfg"
REPLICA_ROUTE = "/explorer/replica"
NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _replace_block(text: str, marker: str, lines: Sequence[str]) -> str:
    """The lines strictly between `# BEGIN marker` and `# END marker` replaced by `lines`
    (indented like the BEGIN line); the markers stay."""
    pattern = re.compile(rf"^([ \t]*)# BEGIN {marker}\b[^\n]*\n(.*?)^[ \t]*# END {marker}\b",
                         re.MULTILINE | re.DOTALL)
    found = pattern.search(text)
    if found is None:
        raise ValueError(f"the configuration has no '# BEGIN {marker}' ... '# END {marker}' block")
    indent = found.group(1)
    body = "".join(f"{indent}{line}\n" for line in lines)
    return text[:found.start(2)] + body + text[found.end(2):]


def render_config(template: str, bind: str, servers: Sequence[tuple[str, str, int]],
                  check_interval_s: float = 5.0) -> str:
    """deploy/haproxy.cfg for HAProxy serving `bind` ("host:port") in front of `servers`
    ((name, host, port) each; a name is also the value of its affinity cookie), health-checked
    every check_interval_s."""
    if not servers:
        raise ValueError("at least one replica")
    names = [name for name, _, _ in servers]
    if len(set(names)) != len(names) or not all(NAME.fullmatch(name) for name in names):
        raise ValueError(f"replica names must be distinct labels of [A-Za-z0-9_-]: {names}")
    if not re.fullmatch(r"[\w.:\[\]*-]+:\d{1,5}", bind):
        raise ValueError(f"not an address to serve: {bind!r}")
    interval_ms = max(100, int(round(check_interval_s * 1000)))
    text = _replace_block(template, "bind", [f"bind {bind}"])
    return _replace_block(text, "servers", [
        f"default-server check inter {interval_ms}ms fall 3 rise 2",
        *(f"server {name} {host}:{port} cookie {name}" for name, host, port in servers)])


@dataclass
class Replica:
    name: str
    port: int
    process: subprocess.Popen
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


@dataclass
class Cluster:
    """Replicas and the HAProxy in front of them (all child processes of this one)."""
    url: str
    replicas: list[Replica]
    haproxy: Optional[subprocess.Popen] = None
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="explorer-replicas-")))
    env: Optional[Mapping[str, str]] = None   # the replicas' environment (None: this process's)

    def replica(self, name: str) -> Replica:
        return next(replica for replica in self.replicas if replica.name == name)

    def stop_replica(self, name: str, kill: bool = False) -> None:
        """Stop one replica (kill: at once, as a crash would; else SIGTERM, then SIGKILL
        after 30 s)."""
        _stop(self.replica(name).process, kill)

    def restart_replica(self, name: str, wait_s: float = 300.0) -> float:
        """Start a stopped replica again on its port; seconds until it serves."""
        old = self.replica(name)
        if old.process.poll() is None:
            return 0.0
        new = start_replica(name, old.port, self.folder, self.env)
        self.replicas[self.replicas.index(old)] = new
        return wait_until_serving(new.url, [new.process], wait_s)

    def stop(self) -> None:
        """Stop HAProxy, then every replica: all asked at once, each waited for (SIGKILL
        after 30 s)."""
        if self.haproxy is not None:
            _stop(self.haproxy, kill=False)
        for replica in self.replicas:
            if replica.process.poll() is None:
                replica.process.terminate()
        for replica in self.replicas:
            _stop(replica.process, kill=False)


def _stop(process: subprocess.Popen, kill: bool, wait_s: float = 30.0) -> None:
    if process.poll() is not None:
        return
    process.kill() if kill else process.terminate()
    try:
        process.wait(wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def start_replica(name: str, port: int, folder: Path, env: Optional[Mapping[str, str]] = None,
                  host: str = "127.0.0.1") -> Replica:
    """`python app.py` as replica `name` on host:port, its output in folder/<name>.log."""
    if not NAME.fullmatch(name):
        raise ValueError(f"not a replica name: {name!r}")
    child_env = dict(os.environ if env is None else env)
    child_env.update(HOST=host, PORT=str(port), EXPLORER_REPLICA=name, PYTHONUNBUFFERED="1",
                     GRADIO_ANALYTICS_ENABLED="False")
    child_env.setdefault("EXPLORER_TRUST_PROXY", "1")
    log = folder / f"{name}.log"
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=child_env,
                                   stdout=out, stderr=subprocess.STDOUT)
    return Replica(name, port, process, log)


def start_haproxy(config_text: str, folder: Path) -> subprocess.Popen:
    """HAProxy in the foreground (-db) with config_text, checked first (-c: a bad file fails
    here with HAProxy's message rather than later), its output in folder/haproxy.log."""
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(binary).exists():
        raise FileNotFoundError("haproxy is not installed (Debian: apt-get install haproxy)")
    path = folder / "haproxy.cfg"
    path.write_text(config_text)
    check = subprocess.run([binary, "-c", "-q", "-f", str(path)], capture_output=True, text=True)
    if check.returncode != 0:
        raise RuntimeError(f"haproxy refused {path}: {check.stdout}{check.stderr}")
    with open(folder / "haproxy.log", "w") as out:
        return subprocess.Popen([binary, "-db", "-f", str(path)], stdout=out,
                                stderr=subprocess.STDOUT)


def replica_answering(url: str, query: str = "", headers: Optional[Mapping[str, str]] = None,
                      timeout_s: float = 5.0) -> str:
    """The name GET <url>explorer/replica?<query> answers (raises if nothing answers)."""
    import json

    address = url.rstrip("/") + REPLICA_ROUTE + (f"?{query}" if query else "")
    request = urllib.request.Request(address, headers=dict(headers or {}))
    with urllib.request.urlopen(request, timeout=timeout_s) as answer:
        return json.loads(answer.read())["replica"]


def wait_until_serving(url: str, processes: Sequence[subprocess.Popen], wait_s: float) -> float:
    """Seconds until GET <url>explorer/replica answers; raises if a process exits first or
    wait_s passes."""
    started = time.monotonic()
    while True:
        for process in processes:
            if process.poll() is not None:
                raise RuntimeError(f"{process.args} exited ({process.returncode}) before {url} served")
        try:
            replica_answering(url, timeout_s=2.0)
            return time.monotonic() - started
        except Exception:
            if time.monotonic() - started > wait_s:
                raise TimeoutError(f"nothing served {url} within {wait_s:.0f} s")
            time.sleep(0.25)


def start_cluster(n: int = 2, port: Optional[int] = None, replica_ports: Optional[Sequence[int]] = None,
                  host: str = "127.0.0.1", env: Optional[Mapping[str, str]] = None,
                  check_interval_s: float = 5.0, wait_s: float = 300.0) -> Cluster:
    """n replicas (each on 127.0.0.1) and HAProxy in front of them serving host:port, once
    every replica and the balancer answer; free ports where none are given. On any failure
    everything started is stopped."""
    port = port or free_port()
    ports = list(replica_ports or [free_port() for _ in range(n)])
    if len(ports) != n:
        raise ValueError(f"{n} replicas, {len(ports)} ports")
    url_host = "127.0.0.1" if host in ("0.0.0.0", "::", "*") else host
    cluster = Cluster(url=f"http://{url_host}:{port}/", replicas=[], env=env)
    try:
        for index, replica_port in enumerate(ports, start=1):
            cluster.replicas.append(start_replica(f"r{index}", replica_port, cluster.folder, env))
        for replica in cluster.replicas:
            wait_until_serving(replica.url, [replica.process], wait_s)
        template = CONFIG.read_text()
        config = render_config(template, f"{host}:{port}",
                               [(r.name, "127.0.0.1", r.port) for r in cluster.replicas],
                               check_interval_s)
        cluster.haproxy = start_haproxy(config, cluster.folder)
        wait_until_serving(cluster.url, [cluster.haproxy], 30.0)
        return cluster
    except BaseException:
        cluster.stop()
        raise


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--replicas", type=int, default=2, help="replicas of app.py (default 2)")
    parser.add_argument("--port", type=int, default=7860, help="the port HAProxy serves (default 7860)")
    parser.add_argument("--host", default="127.0.0.1", help="the address HAProxy serves (default 127.0.0.1)")
    parser.add_argument("--first-replica-port", type=int, default=None,
                        help="replicas on this port and the next ones (default: port + 1)")
    parser.add_argument("--check-interval", type=float, default=5.0,
                        help="seconds between two health checks of a replica (default 5)")
    args = parser.parse_args(argv)
    if not 1 <= args.replicas <= 64:
        parser.error("--replicas: 1 to 64")
    first = args.first_replica_port or args.port + 1
    started = time.monotonic()
    cluster = start_cluster(args.replicas, args.port, range(first, first + args.replicas),
                            host=args.host, check_interval_s=args.check_interval)
    print(f"{args.replicas} replicas serving behind HAProxy at {cluster.url} after "
          f"{time.monotonic() - started:.1f} s (logs and the rendered haproxy.cfg in {cluster.folder})",
          flush=True)
    for replica in cluster.replicas:
        print(f"  {replica.name}: {replica.url}", flush=True)

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    reported: set[int] = set()
    try:
        while cluster.haproxy.poll() is None:
            # a replica that exits is reported once; HAProxy's health check takes it out
            for replica in cluster.replicas:
                if replica.process.poll() is not None and replica.process.pid not in reported:
                    reported.add(replica.process.pid)
                    print(f"replica {replica.name} exited ({replica.process.returncode}); "
                          f"its log: {replica.log}", file=sys.stderr, flush=True)
            time.sleep(5)
        print(f"haproxy exited ({cluster.haproxy.returncode})", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
