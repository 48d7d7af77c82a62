"""Several replicas behind HAProxy (deploy/haproxy.cfg, deploy/replicas.py): a class meets on
one replica.

The tests marked `server` and `slow` start two real replicas of app.py (EXPLORER_WARM=0) and the
real HAProxy on free ports once for the module, and ask GET /explorer/replica (which replica
answered, explorer/web/replica.py) through the balancer: a room code in the url or in the cookie
`explorer_room` reaches one replica every time, two codes are spread over both, a visitor
without a room keeps to the replica of the balancer's affinity cookie, Gradio's queue (join,
then the event stream) works through the balancer and lands on the room's replica, and with one
replica stopped its rooms reach the other. The first tests need no server: the configuration
as rendered, and the route. They skip where haproxy is not installed, unless
REQUIRE_HAPROXY=1 (set by .ci/run, which installs it), in which case they fail.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time

import pytest

from deploy.replicas import CONFIG, render_config, replica_answering, start_cluster
from explorer.web import replica
from tests.helpers import run_coroutine

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"   # a room code's letters (the room link contract)
CHECK_INTERVAL_S = 1.0
MODEL = "smollm2-135m-instruct"
FIGURES: dict[str, float] = {}   # printed at the module's end (docs/SCALING.md quotes them)


def haproxy_or_skip() -> str:
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not os.path.exists(binary):
        if os.environ.get("REQUIRE_HAPROXY") == "1":
            pytest.fail("haproxy is not installed (REQUIRE_HAPROXY=1)")
        pytest.skip("haproxy is not installed (apt-get install haproxy)")
    return binary


# --- no server -------------------------------------------------------------------------------

def test_the_rendered_config_serves_the_given_address_and_replicas(tmp_path):
    text = render_config(CONFIG.read_text(), "0.0.0.0:8000",
                         [("r1", "127.0.0.1", 9001), ("r2", "127.0.0.1", 9002), ("r3", "10.0.0.3", 9003)],
                         check_interval_s=2.5)
    lines = [line.strip() for line in text.splitlines()]
    assert [line for line in lines if line.startswith("bind ")] == ["bind 0.0.0.0:8000"]
    assert [line for line in lines if line.startswith("server ")] == [
        "server r1 127.0.0.1:9001 cookie r1", "server r2 127.0.0.1:9002 cookie r2",
        "server r3 10.0.0.3:9003 cookie r3"]
    assert "default-server check inter 2500ms fall 3 rise 2" in lines
    # the routing itself is the shipped file's, untouched
    for rule in ("balance hash var(txn.room)", "hash-type consistent", "stick match var(txn.room)",
                 "stick store-response res.hdr(x-explorer-room)",
                 "ignore-persist if { var(txn.room),in_table(replicas) }", "option httpchk GET /"):
        assert rule in lines
    path = tmp_path / "haproxy.cfg"
    path.write_text(text)
    checked = subprocess.run([haproxy_or_skip(), "-c", "-f", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_shipped_config_is_valid_as_written():
    checked = subprocess.run([haproxy_or_skip(), "-c", "-f", str(CONFIG)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("servers, bind", [
    ([], "127.0.0.1:8000"),
    ([("r1", "127.0.0.1", 1), ("r1", "127.0.0.1", 2)], "127.0.0.1:8000"),   # one name twice
    ([("r 1", "127.0.0.1", 1)], "127.0.0.1:8000"),                          # not a label
    ([("r1", "127.0.0.1", 1)], "127.0.0.1:8000\n    server evil 1.2.3.4:80"),  # a line smuggled in
])
def test_render_refuses_what_would_not_be_a_cluster(servers, bind):
    with pytest.raises(ValueError):
        render_config(CONFIG.read_text(), bind, servers)


def test_render_refuses_a_config_without_its_blocks():
    with pytest.raises(ValueError, match="BEGIN servers"):
        render_config("frontend x\n    # BEGIN bind\n    bind :1\n    # END bind\n", "127.0.0.1:2",
                      [("r1", "127.0.0.1", 3)])


def call_route(path: str, method: str = "GET", query: bytes = b"", headers=(),
               holds=lambda code: False) -> tuple[int, bytes, bool, list]:
    """(status, body, whether the app behind was called, the answer's headers) of one request
    to the middleware (the app behind answers 204)."""
    reached = []
    sent = []

    async def app(scope, receive, send):
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": [(b"x-app", b"1")]})
        await send({"type": "http.response.body", "body": b""})

    async def send(message):
        sent.append(message)

    middleware = replica.ReplicaRoute(app, holds=holds)
    scope = {"type": "http", "path": path, "method": method, "root_path": "", "query_string": query,
             "headers": list(headers)}
    run_coroutine(middleware(scope, None, send))
    return sent[0]["status"], sent[1]["body"], bool(reached), sent[0]["headers"]


def test_the_route_answers_the_replica_name_and_nothing_else(monkeypatch):
    monkeypatch.setenv("EXPLORER_REPLICA", "r2")
    status, body, passed, _ = call_route(replica.REPLICA_ROUTE)
    assert (status, json.loads(body), passed) == (200, {"replica": "r2"}, False)
    assert call_route(replica.REPLICA_ROUTE, "POST")[0] == 405
    assert call_route("/gradio_api/info")[:3] == (204, b"", True)   # every other path reaches the app
    # a name that is not a label (a path, markup) is never echoed
    for bad in ("../etc", "<b>x</b>", "x" * 33):
        monkeypatch.setenv("EXPLORER_REPLICA", bad)
        assert json.loads(call_route(replica.REPLICA_ROUTE)[1]) == {"replica": ""}
    monkeypatch.delenv("EXPLORER_REPLICA")
    assert json.loads(call_route(replica.REPLICA_ROUTE)[1]) == {"replica": ""}


def test_answers_to_a_room_this_replica_holds_carry_the_room_for_the_balancer(monkeypatch):
    monkeypatch.setenv("EXPLORER_REPLICA", "r1")     # a named replica: behind the balancer
    held = {"ABC234"}
    asked = []

    def holds(code):
        asked.append(code)
        return code in held

    def room_header(query=b"", cookie=None, path="/gradio_api/queue/join"):
        headers = [(b"cookie", cookie)] if cookie is not None else []
        answer = call_route(path, query=query, headers=headers, holds=holds)[3]
        return [value for name, value in answer if name == replica.ROOM_HEADER]

    assert room_header(b"room=ABC234&key=x") == [b"ABC234"]
    assert room_header(b"room=abc234") == [b"ABC234"]      # as the balancer keys it: uppercase
    assert room_header(cookie=b"lang=en; explorer_room=ABC234") == [b"ABC234"]
    # another app's odd cookie beside it does not hide the room
    assert room_header(cookie=b'prefs={"a": [1, 2]}; explorer_room=ABC234; x="') == [b"ABC234"]
    assert room_header(b"room=ABC234", path=replica.REPLICA_ROUTE) == [b"ABC234"]
    # the url's room decides over the cookie's, as in the balancer
    assert room_header(b"room=XYZ789", cookie=b"explorer_room=ABC234") == []
    # a room held elsewhere, no room, or something that is not a code: no header, and the
    # store is not even asked for what is not a code
    asked.clear()
    for query, cookie in ((b"room=XYZ789", None), (b"", None), (b"room=ABC", None),
                          (b"room=ABC2340", None), (b"room=" + b"A" * 5000, None),
                          (b"", b"explorer_room=<script>"), (b"", b"explorer_room=\"ABC234"),
                          (b"", b"\xff\xfe=;;"), (b"room=AB%0AC234", None),
                          (b"room=ABC234&" + b"&".join([b"x=1"] * 100), None)):
        assert room_header(query, cookie) == [], (query, cookie)
    assert asked == ["XYZ789"]
    # the app's own headers are kept
    headers = call_route("/", query=b"room=ABC234", holds=holds)[3]
    assert (b"x-app", b"1") in headers


def test_the_room_header_reads_the_real_store():
    from explorer.classroom.rooms import ROOMS

    code, _ = ROOMS.create("test_replicas")
    assert replica.holds_room(code)
    assert not replica.holds_room("ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY")


# --- two replicas behind the real HAProxy ---------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    haproxy_or_skip()
    env = dict(os.environ, EXPLORER_WARM="0", GRADIO_ANALYTICS_ENABLED="False")
    started = time.monotonic()
    running = start_cluster(2, env=env, check_interval_s=CHECK_INTERVAL_S, wait_s=400)
    FIGURES["start-up of both replicas and HAProxy, s"] = time.monotonic() - started
    yield running
    running.stop()
    shutil.rmtree(running.folder, ignore_errors=True)   # the replicas' and HAProxy's logs
    print("\n[replicas] " + "; ".join(f"{name}: {value:.2f}" for name, value in FIGURES.items()))


@pytest.fixture
def both(cluster):
    """The cluster with both replicas serving and HAProxy sending to both (a test that stopped
    one, run before this one in a shuffled order, left it stopped)."""
    for member in cluster.replicas:
        if member.process.poll() is not None:
            cluster.restart_replica(member.name)
            wait_for(lambda: replica_answering(cluster.url, headers={
                "Cookie": f"explorer_replica={member.name}"}) == member.name, 30)
    return cluster


def wait_for(condition, timeout_s: float) -> float:
    started = time.monotonic()
    while True:
        try:
            if condition():
                return time.monotonic() - started
        except OSError:
            pass
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"not within {timeout_s} s")
        time.sleep(0.2)


def codes_by_replica(cluster, per_replica: int = 1, tries: int = 60) -> dict[str, list[str]]:
    """Room codes (6 letters of the contract's alphabet, from a fixed seed) sorted by the
    replica the balancer sends them to, found by asking it, `per_replica` for each replica."""
    found: dict[str, list[str]] = {member.name: [] for member in cluster.replicas}
    rng = random.Random(29)
    for _ in range(tries):
        code = "".join(rng.choice(ALPHABET) for _ in range(6))
        found[replica_answering(cluster.url, f"room={code}")].append(code)
        if all(len(codes) >= per_replica for codes in found.values()):
            return found
    raise AssertionError(f"{tries} codes did not reach every replica {per_replica} times: {found}")


@pytest.mark.server
@pytest.mark.slow
def test_a_room_reaches_one_replica_by_its_link_and_by_its_cookie(both):
    codes = codes_by_replica(both)
    (a_replica, (a, *_)), (b_replica, (b, *_)) = sorted(codes.items())
    assert a_replica != b_replica
    for code, home in ((a, a_replica), (b, b_replica)):
        # a teacher's link and a student's link: the key never changes the replica
        assert {replica_answering(both.url, f"room={code}") for _ in range(10)} == {home}
        assert replica_answering(both.url, f"room={code}&key=some-secret") == home
        assert replica_answering(both.url, f"room={code.lower()}") == home
        # every later request of the page carries the room in its cookie
        assert {replica_answering(both.url, headers={"Cookie": f"explorer_room={code}"})
                for _ in range(10)} == {home}
    # the link decides over an older cookie
    assert replica_answering(both.url, f"room={a}", {"Cookie": f"explorer_room={b}"}) == a_replica
    # a room no replica holds (none of these: no class was started) yields to the affinity
    # cookie: a room just made is reached on its teacher's replica this way
    assert replica_answering(both.url, headers={
        "Cookie": f"explorer_room={a}; explorer_replica={b_replica}"}) == b_replica


@pytest.mark.server
@pytest.mark.slow
def test_rooms_are_spread_over_both_replicas(both):
    codes = codes_by_replica(both, per_replica=3)
    FIGURES["codes asked to find 3 on each replica"] = sum(len(c) for c in codes.values())
    assert all(len(found) >= 3 for found in codes.values())


@pytest.mark.server
@pytest.mark.slow
def test_a_visitor_without_a_room_keeps_to_the_replica_of_the_affinity_cookie(both):
    import urllib.request

    first = {}
    for _ in range(4):   # no cookie: round robin over both
        with urllib.request.urlopen(both.url.rstrip("/") + replica.REPLICA_ROUTE, timeout=10) as answer:
            name = json.loads(answer.read())["replica"]
            first[name] = answer.headers.get("Set-Cookie", "")
    assert set(first) == {"r1", "r2"}
    for name, cookie in first.items():
        assert cookie.startswith(f"explorer_replica={name};") and "HttpOnly" in cookie
        assert {replica_answering(both.url, headers={"Cookie": f"explorer_replica={name}"})
                for _ in range(10)} == {name}


def join_and_stream(join_url: str, stream_url: str, payload: dict, cookies: dict) -> dict:
    """POST queue/join at join_url, then read the session's event stream at stream_url: the
    last message of the stream (process_completed), or an {"error": ...}."""
    import uuid

    import httpx

    session = uuid.uuid4().hex
    try:
        return _join_and_stream(join_url, stream_url, payload, cookies, session)
    except httpx.HTTPError as error:   # a stream cut short by the server
        return {"error": f"{type(error).__name__}: {error}"}


def _join_and_stream(join_url: str, stream_url: str, payload: dict, cookies: dict, session: str) -> dict:
    import httpx

    with httpx.Client(timeout=120, cookies=cookies) as http:
        joined = http.post(f"{join_url}gradio_api/queue/join", json={**payload, "session_hash": session})
        if joined.status_code != 200:
            return {"error": f"join {joined.status_code}"}
        with http.stream("GET", f"{stream_url}gradio_api/queue/data",
                         params={"session_hash": session}) as events:
            if events.status_code != 200:
                return {"error": f"stream {events.status_code}"}
            for line in events.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("msg") == "process_completed":
                        return message
    return {"error": "the stream ended without a result"}


@pytest.mark.server
@pytest.mark.slow
def test_gradio_queue_and_its_event_stream_work_through_the_balancer(both):
    from gradio_client import Client

    from bench.cancel import join_payload

    codes = codes_by_replica(both)
    home, (code, *_) = sorted(codes.items())[0]
    other = next(m for m in both.replicas if m.name != home)
    cookies = {"explorer_room": code}
    # a whole client (config, join, the event stream of each message) through the balancer
    started = time.monotonic()
    client = Client(both.url, verbose=False, headers={"Cookie": f"explorer_room={code}"})
    try:
        text, status, *_ = client.predict(model_name=MODEL, prompt="Name a colour.", n_new=4,
                                          compare_value=False, check_value=False, api_name="/generate")
    finally:
        client.close()
    FIGURES["a Generate run of 4 tokens through the balancer, s"] = time.monotonic() - started
    assert text.strip() and "4" in status
    payload = join_payload(both.url, "/generate", dict(
        model_name=MODEL, lang="en", prompt="Name a colour.", n_new=2, temp=0.0, k=0, p=1.0,
        seed_value=0, policy_value="full", w=64, s=4, compare_value=False, check_value=False))
    home_url = both.replica(home).url
    # the join went to the room's replica: its stream, read there directly, has the result ...
    done = join_and_stream(both.url, home_url, payload, cookies)
    assert done.get("success") is True, done
    # ... and the stream of a session joined there comes back through the balancer
    done = join_and_stream(home_url, both.url, payload, cookies)
    assert done.get("success") is True, done
    # the other replica knows nothing of a session joined on the room's (why the stream must
    # follow the page): its stream never completes that session's event
    joined_elsewhere = join_and_stream(both.url, other.url, payload, cookies)
    assert joined_elsewhere.get("success") is not True, joined_elsewhere


@pytest.mark.server
@pytest.mark.slow
def test_a_stopped_replica_s_rooms_reach_the_other_and_the_other_rooms_stay(both):
    codes = codes_by_replica(both, per_replica=2)
    stopped, survivor = "r1", "r2"
    gone, staying = codes[stopped], codes[survivor]
    both.stop_replica(stopped, kill=True)   # as a crash would
    started = time.monotonic()
    # with HAProxy's retries the first request after the crash already reaches the survivor
    assert replica_answering(both.url, f"room={gone[0]}") == survivor
    FIGURES["first request of a stopped replica's room answered by the other, s"] = time.monotonic() - started
    # the health check marks it down; its rooms (link or cookie) and its affinity cookie now
    # reach the survivor, every time
    time.sleep(4 * CHECK_INTERVAL_S)
    for code in gone:
        assert {replica_answering(both.url, f"room={code}") for _ in range(5)} == {survivor}
        assert replica_answering(both.url, headers={"Cookie": f"explorer_room={code}"}) == survivor
    assert {replica_answering(both.url, headers={"Cookie": f"explorer_replica={stopped}"})
            for _ in range(5)} == {survivor}
    # the survivor's own rooms never moved
    for code in staying:
        assert {replica_answering(both.url, f"room={code}") for _ in range(5)} == {survivor}


# --- real rooms on the replicas (explorer/classroom) ----------------------------------------

def affinity(cluster, name: str) -> str:
    """The affinity cookie of a visitor whose page is on replica `name`: asked of the balancer
    until its round robin answers from that replica, as a browser would receive it."""
    import urllib.request

    for _ in range(20):
        with urllib.request.urlopen(cluster.url.rstrip("/") + replica.REPLICA_ROUTE, timeout=10) as answer:
            if json.loads(answer.read())["replica"] == name:
                cookie = answer.headers.get("Set-Cookie", "").split(";")[0]
                assert cookie == f"explorer_replica={name}", cookie
                return cookie
    raise AssertionError(f"the round robin never answered from {name}")


def page(cluster, *cookies: str):
    """A visitor's page through the balancer: a gradio_client Client whose every request
    carries the page's cookies (the affinity cookie, the room's)."""
    from gradio_client import Client

    return Client(cluster.url, verbose=False, headers={"Cookie": "; ".join(cookies)} if cookies else None)


def start_class(cluster, name: str) -> tuple[str, str]:
    """A teacher whose page is on replica `name` starts a class: (code, the teacher's affinity
    cookie). The page then names the room in its cookie and asks the room's revision every
    second (static/classroom.js): the balancer's first sight of the room, on that replica."""
    import urllib.request

    cookie = affinity(cluster, name)
    teacher = page(cluster, cookie)
    try:
        out = teacher.predict("en", api_name="/class_start")
    finally:
        teacher.close()
    info = next(o for o in out if isinstance(o, str) and "Class code" in o)
    code = info.split("`")[1]
    request = urllib.request.Request(f"{cluster.url}class/revision?room={code}",
                                     headers={"Cookie": f"{cookie}; explorer_room={code}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200 and answer.read().strip().isdigit()
        # the balancer learned the room from the replica's header and kept it to itself
        assert answer.headers.get("X-Explorer-Room") is None
    assert replica_answering(cluster.url, f"room={code}") == name
    return code, cookie


def join_class(cluster, code: str, *cookies: str) -> list:
    student = page(cluster, f"explorer_room={code}", *cookies)
    try:
        return list(student.predict(code, "", "en", api_name="/class_join"))
    finally:
        student.close()


@pytest.mark.server
@pytest.mark.slow
def test_a_class_meets_on_its_teachers_replica_and_two_classes_spread(both):
    from gradio_client.exceptions import AppError

    started = {name: start_class(both, name) for name in ("r1", "r2")}
    (a, _), (b, _) = started["r1"], started["r2"]
    for code, home in ((a, "r1"), (b, "r2")):
        other = "r2" if home == "r1" else "r1"
        # the class link reaches the teacher's replica, whatever the visitor's affinity was
        for cookies in ((), (f"explorer_replica={other}",), (f"explorer_replica={home}",)):
            assert replica_answering(both.url, f"room={code}", {"Cookie": "; ".join(cookies)}) == home
            assert replica_answering(both.url, headers={
                "Cookie": "; ".join((f"explorer_room={code}", *cookies))}) == home
        # students join through the balancer, one of them coming from the other replica
        for cookies in ((), (f"explorer_replica={other}",)):
            out = join_class(both, code, *cookies)
            assert any(isinstance(o, str) and code in o for o in out), out
    # the other replica really does not hold the class: a student sent there is told so
    with pytest.raises(AppError, match="not on this server any more"):
        from gradio_client import Client
        Client(both.replica("r2").url, verbose=False).predict(a, "", "en", api_name="/class_join")


@pytest.mark.server
@pytest.mark.slow
def test_a_stopped_replica_s_class_is_told_so_and_rejoins_while_the_other_class_carries_on(both):
    from gradio_client.exceptions import AppError

    a, teacher_a = start_class(both, "r1")
    b, teacher_b = start_class(both, "r2")
    assert any(b in str(o) for o in join_class(both, b))
    both.stop_replica("r1", kill=True)   # mid-class, as a crash would
    started = time.monotonic()
    # the stopped replica's class: its members' next requests reach r2, which says so
    assert replica_answering(both.url, f"room={a}") == "r2"
    with pytest.raises(AppError, match="not on this server any more"):
        join_class(both, a)
    FIGURES["a stopped replica's student told the class is gone, s"] = time.monotonic() - started
    # ... and they start again there: the teacher (whose affinity pointed at r1) starts a new
    # class, and a student joins it
    new_teacher = page(both, teacher_a)
    try:
        out = new_teacher.predict("en", api_name="/class_start")
    finally:
        new_teacher.close()
    new = next(o for o in out if isinstance(o, str) and "Class code" in o).split("`")[1]
    assert replica_answering(both.url, f"room={new}") == "r2"
    assert any(new in str(o) for o in join_class(both, new))
    # the other class carries on: its link still reaches its replica, and students still join
    assert replica_answering(both.url, f"room={b}") == "r2"
    assert any(b in str(o) for o in join_class(both, b, teacher_b))
