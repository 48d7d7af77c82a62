"""The hostile client of bench/class_siege.py: four floods at once, from the class's own address
(SHARED), every loop bounded in count and in time, only to 127.0.0.1: joins with the projected
code (one session, and none), answers of its one member, token-less probes of random codes, and
slow bodies. Its outcomes are counted by kind: accepted, or refused by reason / status."""
from __future__ import annotations

import asyncio
import json
import secrets
import time

SHARED = "198.51.100.7"     # the one school address, as the Space's proxy forwards it
HOSTILE_SESSION = "hostile-page-0001"
SLOW_AT_ONCE = 8            # slow bodies held at once by the attacker
SLOW_BODY_BYTES = 200_000   # what each declares (under the 1 MiB per-body bound)
SLOW_WAIT_S = 45.0          # a slow body's connection is given up after this (the server: 30 s)


def lesson_links() -> tuple[list[str], list[str]]:
    """(plain step links, predict step links) of every lesson, as the class stores them."""
    plain, predict = [], []
    for link, bounds in _steps().items():
        (predict if bounds else plain).append(link)
    return plain, predict


def _steps() -> dict:
    """{step link: its prediction's (low, high) or None}, every lesson's steps in order."""
    from explorer.lessons import LESSONS
    from explorer.ui.page.lessons import step_link

    return {step_link(name, index): (step.predict.low, step.predict.high) if step.predict else None
            for name, lesson in LESSONS.items() for index, step in enumerate(lesson.steps)}


def bounds_of(link: str) -> tuple[float, float]:
    return _steps()[link]


def _bump(counts: dict, key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def refusal(response) -> str:
    """"ok" (answered 200), or the status and the store's reason (its locale key) for a refusal."""
    if response.status_code == 200:
        return "ok"
    try:
        error = str(response.json().get("error"))
    except ValueError:
        error = ""
    from explorer.locales import text
    for key in ("probes", "join_rate", "no_session", "address_joins", "room_full", "locked",
                "not_now", "revealed", "answer_rate", "answer_range", "not_member", "gone"):
        words = text(f"classroom.err.{key}", "en", n="{n}", low="{low}", high="{high}").split("{")[0]
        if error.startswith(words[:40]):
            return f"{response.status_code} {key}"
    return f"{response.status_code} {error[:40]}"


async def flood_joins(http, url, code, until, counts, pace_s=0.05, max_count=100_000):
    body = {"data": [code[:3].lower() + "-" + code[3:], "bot", None, "en"]}
    for i in range(max_count):
        if time.monotonic() > until:
            return
        sent = dict(body, session_hash=HOSTILE_SESSION) if i % 2 == 0 else body
        try:
            response = await http.post(f"{url}gradio_api/run/class_join", json=sent)
            _bump(counts, ("session " if i % 2 == 0 else "no session ") + refusal(response))
        except Exception as error:       # noqa: BLE001
            _bump(counts, f"failed {type(error).__name__}")
        await asyncio.sleep(pace_s)


async def flood_answers(http, url, predict, until, counts, pace_s=0.02, max_count=200_000):
    """The hostile member's answers, to every predict step in turn: the current one is counted
    against its 6 a minute, the others answered "not now"."""
    for i in range(max_count):
        if time.monotonic() > until:
            return
        link = predict[i % len(predict)]
        body = {"data": [None, link, bounds_of(link)[0], "en"], "session_hash": HOSTILE_SESSION}
        try:
            response = await http.post(f"{url}gradio_api/run/class_answer", json=body)
            outcome = refusal(response)
            if outcome == "ok":       # a page that is no member yet is answered with nothing
                data = response.json().get("data") or [None]
                outcome = "accepted" if isinstance(data[0], str) and data[0] else "ignored"
            _bump(counts, outcome)
        except Exception as error:       # noqa: BLE001
            _bump(counts, f"failed {type(error).__name__}")
        await asyncio.sleep(pace_s)


async def flood_probes(http, url, until, counts, pace_s=0.02, max_count=200_000):
    from explorer.classroom.rooms import ALPHABET
    for _ in range(max_count):
        if time.monotonic() > until:
            return
        guess = "".join(secrets.choice(ALPHABET) for _ in range(6))
        try:
            response = await http.get(f"{url}class/revision?room={guess}")
            _bump(counts, str(response.status_code))
        except Exception as error:       # noqa: BLE001
            _bump(counts, f"failed {type(error).__name__}")
        await asyncio.sleep(pace_s)


async def slow_body(host: str, port: int, trickle: bool, counts: dict, times: list) -> None:
    """One POST declaring SLOW_BODY_BYTES, 100 sent, then a byte every 2 s (trickle) or none;
    the status the server answers with (or how the connection ended) within SLOW_WAIT_S."""
    started = time.monotonic()
    writer = None
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write((f"POST /gradio_api/run/class_join HTTP/1.1\r\nHost: {host}:{port}\r\n"
                      f"Content-Type: application/json\r\nX-Forwarded-For: {SHARED}\r\n"
                      f"Content-Length: {SLOW_BODY_BYTES}\r\n\r\n").encode() + b"{" + b" " * 99)
        await writer.drain()

        async def drip():
            while trickle:
                await asyncio.sleep(2.0)
                writer.write(b" ")
                await writer.drain()
        dripping = asyncio.create_task(drip())
        try:
            line = await asyncio.wait_for(reader.readline(), SLOW_WAIT_S)
        finally:
            dripping.cancel()
        status = line.split()[1].decode() if len(line.split()) > 1 else "closed"
    except asyncio.TimeoutError:
        status = "held"                   # still held after SLOW_WAIT_S: the attack worked
    except Exception as error:            # noqa: BLE001
        status = f"failed {type(error).__name__}"
    finally:
        if writer is not None:
            writer.close()
    _bump(counts, ("trickled " if trickle else "stalled ") + status)
    times.append(time.monotonic() - started)


async def flood_slow_bodies(url, until, counts, times, max_count=10_000):
    from urllib.parse import urlparse
    parts = urlparse(url)
    running: set = set()
    for i in range(max_count):
        if time.monotonic() > until - SLOW_WAIT_S + 10:   # the last ones end near `until`
            break
        while len(running) >= SLOW_AT_ONCE:
            _, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        running.add(asyncio.create_task(slow_body(parts.hostname, parts.port, i % 2 == 0,
                                                  counts, times)))
        await asyncio.sleep(0.5)
    if running:
        await asyncio.wait(running)


async def attacker_process(url: str, code: str, seconds: float) -> None:
    import httpx

    _, predict = lesson_links()
    until = time.monotonic() + seconds
    counts: dict[str, dict] = {"joins": {}, "answers": {}, "probes": {}, "slow_bodies": {}}
    slow_times: list[float] = []
    async with httpx.AsyncClient(timeout=30, headers={"x-forwarded-for": SHARED}) as http:
        await asyncio.gather(
            flood_joins(http, url, code, until, counts["joins"]),
            flood_answers(http, url, predict, until, counts["answers"]),
            flood_probes(http, url, until, counts["probes"]),
            flood_slow_bodies(url, until, counts["slow_bodies"], slow_times))
    counts["slow_body_s_max"] = max(slow_times) if slow_times else None
    print(json.dumps(counts), flush=True)
