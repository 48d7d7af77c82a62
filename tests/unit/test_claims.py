"""The claims board (explorer/claims/board.py, registry.py) with fake evidence functions: every
kind of row, the time limits, stopping, the cache, both languages. No model runs here; the real
board is timed by bench/claims.py."""
from __future__ import annotations

import logging
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from explorer.claims import board
from explorer.claims.evidence import CLAIM_IDS, Evidence, Measure
from explorer.claims.registry import CLAIMS, ClaimEntry, resolve
from tests import claims_fakes as fakes


def fake_loaded(name="smollm2-135m-instruct", dtype="torch.float32", layers=30):
    return SimpleNamespace(name=name, spec=SimpleNamespace(title="SmolLM2-135M-Instruct"),
                           device="cpu", dtype=dtype, config=SimpleNamespace(n_layers=layers))


@pytest.fixture(scope="module")
def fast():
    return board.run(fake_loaded(), registry=fakes.FAST_REGISTRY)


# ----------------------------------------------------------------------------- the registry

def test_the_registry_names_one_function_per_claim_in_its_topic():
    assert tuple(entry.claim for entry in CLAIMS) == CLAIM_IDS
    targets = {entry.claim: entry.target for entry in CLAIMS}
    assert targets["C1"] == "explorer.generate.evidence:evidence_c1"
    assert targets["C2"] == "explorer.generate.roofline:evidence_c2"
    assert targets["C11"] == "explorer.rope.evidence:evidence_c11"
    assert targets["C19"] == "explorer.architecture.evidence:evidence_c19"
    assert targets["C20"] == "explorer.generate.batch_evidence:evidence_c20"
    for entry in CLAIMS:
        assert entry.function == f"evidence_{entry.claim.lower()}"
        assert entry.statement == f"about.c.{entry.claim}"
        assert entry.places and entry.module.startswith("explorer.")


def test_the_apps_registry_finds_every_function_and_a_missing_one_stops_the_start():
    from explorer.claims.registry import ClaimNotFound, check

    check()   # every claim of the app's registry has its function
    with pytest.raises(ClaimNotFound, match=r"C14 \(explorer.no_such_topic.evidence:evidence_c14\)"):
        check((*CLAIMS[:13], ClaimEntry("C14", "explorer.no_such_topic.evidence:evidence_c14", ("moe",))))
    with pytest.raises(ClaimNotFound, match="C1 "):
        check((ClaimEntry("C1", f"{fakes.HERE}:evidence_c99", ("generate",)),))


def test_a_function_not_written_yet_resolves_to_none_and_a_broken_module_raises(tmp_path, monkeypatch):
    assert resolve(ClaimEntry("C1", "explorer.no_such_topic.evidence:evidence_c1", ("generate",))) is None
    assert resolve(ClaimEntry("C1", "no_such_package.evidence:evidence_c1", ("generate",))) is None
    assert resolve(ClaimEntry("C1", f"{fakes.HERE}:evidence_c99", ("generate",))) is None
    assert resolve(ClaimEntry("C11", f"{fakes.HERE}:passing", ("rope",))) is fakes.passing
    (tmp_path / "broken_claims_module.py").write_text("raise ImportError('half written')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="half written"):
        resolve(ClaimEntry("C1", "broken_claims_module:evidence_c1", ("generate",)))
    row = board.run(fake_loaded(), registry=(ClaimEntry("C1", "broken_claims_module:evidence_c1",
                                                        ("generate",)),)).rows[0]
    assert (row.verdict, row.error) == ("fail", board.FAILED)   # broken is failing, not missing
    sys.modules.pop("broken_claims_module", None)


# ----------------------------------------------------------------------------- the rows

def test_every_kind_of_row(fast):
    rows = {row.claim: row for row in fast.rows}
    assert [row.claim for row in fast.rows] == list(CLAIM_IDS)
    assert rows["C11"].passed and rows["C11"].verdict == "pass"
    assert rows["C11"].evidence.measures[0].value == 30           # ran on the loaded model
    assert (rows["C12"].verdict, rows["C12"].error) == ("fail", None)   # the criterion failed
    assert (rows["C13"].verdict, rows["C13"].error) == ("fail", board.FAILED)
    assert (rows["C14"].verdict, rows["C14"].error) == ("missing", board.MISSING)
    assert (rows["C15"].verdict, rows["C15"].error) == ("fail", board.BAD_RESULT)
    assert (rows["C16"].verdict, rows["C16"].error) == ("fail", board.BAD_RESULT)  # C1's Evidence
    assert (fast.count("pass"), fast.count("fail"), fast.count("missing")) == (17, 4, 1)
    assert fast.complete and fast.model == "smollm2-135m-instruct" and fast.dtype == "float32"
    # links: the section the evidence names; the main tab alone when there is no evidence
    assert rows["C11"].link == "#open=rope/section-rope-qk-title"
    assert rows["C14"].link == "#open=moe"


def test_a_failing_function_shows_a_message_not_a_traceback(caplog):
    with caplog.at_level(logging.ERROR, logger="explorer.claims.board"):
        result = board.run(fake_loaded(), registry=fakes.FAST_REGISTRY[12:13])   # C13 raises
    cell = board.table(result, "en").iloc[0, 2]
    assert cell == "The evidence computation failed (the server log has the details)."
    assert "secret" not in cell and "Traceback" not in cell
    assert "exploded" in caplog.text           # the log has it


def test_table_has_twenty_rows_in_both_languages(fast):
    titles = {"rope": "rope.tab", "moe": "moe.tab", "generate": "generate.tab"}
    en, zh = board.table(fast, "en", titles), board.table(fast, "zh", titles)
    assert len(en) == len(zh) == 22
    assert list(en.columns) == ["id", "claim", "evidence (measured now)", "criterion", "verdict",
                                "s", "shown in"]
    assert list(zh.columns) == ["编号", "论断", "证据（现场测得）", "判据", "结论", "秒", "演示位置"]
    c11 = en.set_index("id").loc["C11"]
    assert c11["claim"] == "RoPE rotates dimension pairs; the score depends only on m − n."
    assert c11["verdict"] == "✓ holds" and zh.set_index("编号").loc["C11", "结论"] == "✓ 成立"
    assert c11["evidence (measured now)"] == "s = 30; s = 3.1e-06 s"          # labels in the visitor's language
    assert zh.set_index("编号").loc["C11", "证据（现场测得）"] == "秒 = 30; 秒 = 3.1e-06 s"
    assert c11["shown in"] == "[RoPE ›](#open=rope/section-rope-qk-title)"
    assert en.set_index("id").loc["C12", "verdict"] == "✗ fails"
    assert en.set_index("id").loc["C14", "verdict"] == "– not available"
    assert zh.set_index("编号").loc["C14", "结论"] == "– 暂无"
    assert "暂无：此论断还没有证据函数。" == zh.set_index("编号").loc["C14", "证据（现场测得）"]
    assert en.set_index("id").loc["C14", "criterion"] == "—"


def test_the_board_before_and_while_it_runs():
    blank = board.pending(fakes.FAST_REGISTRY)
    en = board.table(blank, "en")
    assert len(en) == 22 and set(en["verdict"]) == {"… not run"} and set(en["evidence (measured now)"]) == {"—"}
    assert en.iloc[13, 6] == "[MoE routing ›](#open=moe)"                  # linked before any run
    assert board.summary(blank, "zh") == "按**运行**，在已加载的模型上核验每个论断。"
    seen: list = []
    result = board.run(fake_loaded(), registry=fakes.FAST_REGISTRY, on_row=seen.append)
    assert tuple(seen) == result.rows
    halfway = board.table(board.pending(fakes.FAST_REGISTRY, result.rows[:12]), "en")
    assert list(halfway["verdict"][10:14]) == ["✓ holds", "✗ fails", "… not run", "… not run"]


def test_summary_counts_the_verdicts_in_both_languages(fast):
    en, zh = board.summary(fast, "en"), board.summary(fast, "zh")
    assert en.startswith("**17 of 22 claims hold** on SmolLM2-135M-Instruct (cpu, float32): "
                         "4 fail, 1 not available. Computed at ")
    assert "**22 个论断中有 17 个成立**：4 个不成立，1 个暂无" in zh
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(fast.computed_at))
    assert stamp in en and stamp in zh


@pytest.mark.parametrize("value, digits, shown", [
    (46080, 3, "46,080"), (3.14159e-6, 2, "3.1e-06"), (0.51234, 3, "0.512"), (131072.0, 3, "131,072"),
    (1.5, 3, "1.5"), (0.0, 3, "0"), (2.25, 3, "2.25"), (1234.5678, 3, "1,235"), (float("nan"), 3, "nan"),
    (-0.5, 2, "-0.5"), (4.5e20, 3, "4.50e+20"),
])
def test_numbers_are_shown_with_their_significant_digits(value, digits, shown):
    assert board.format_value(value, digits) == shown


def test_a_measure_carries_its_unit():
    assert board.format_measure(Measure("claims.col.seconds", 2.5, "×"), "en") == "s = 2.5×"
    assert board.format_measure(Measure("claims.col.seconds", 46080, "B"), "en") == "s = 46,080 B"
    # a label an evidence author has not written yet shows as its key, the board still draws
    assert board.format_measure(Measure("claims.m.not_written", 1.0), "zh") == "claims.m.not_written = 1"


# ----------------------------------------------------------------------------- time limits, stop

def test_a_slow_function_times_out_and_is_not_started_again_while_it_runs():
    slow = (ClaimEntry("C13", f"{fakes.HERE}:slow", ("rope",)),)
    fakes.RELEASE.clear()
    started = time.perf_counter()
    row = board.run(fake_loaded(), registry=slow, claim_limit_s=0.3).rows[0]
    assert (row.verdict, row.error) == ("fail", board.TIMEOUT)
    assert 0.3 <= row.seconds < 2.0 and time.perf_counter() - started < 2.0
    again = board.run(fake_loaded(), registry=slow, claim_limit_s=0.3).rows[0]
    assert again.error == board.BUSY and again.seconds == 0.0   # the first call still runs
    fakes.RELEASE.set()
    for _ in range(50):
        row = board.run(fake_loaded(), registry=slow, claim_limit_s=3.0).rows[0]
        if row.error != board.BUSY:
            break
        time.sleep(0.05)
    assert row.passed


def _sleeper(seconds):
    def evidence(loaded):
        time.sleep(seconds)
        return fakes.passing(loaded)
    return evidence


def test_the_board_time_limit_cuts_the_rest(monkeypatch):
    monkeypatch.setattr(fakes, "sleepy", _sleeper(0.3), raising=False)
    three = tuple(ClaimEntry("C11", f"{fakes.HERE}:sleepy", ("rope",)) for _ in range(3))
    result = board.run(fake_loaded(), registry=three, board_limit_s=0.45, claim_limit_s=5.0)
    assert [row.error for row in result.rows] == [None, board.BOARD_TIME, board.BOARD_TIME]
    assert result.rows[0].passed and result.rows[2].seconds == 0.0
    assert result.seconds < 1.5
    assert board.table(result, "en").iloc[2, 2] == "Not run: the board's time limit of 0 s was reached."


def test_stop_marks_the_rest_stopped_and_is_not_cached(monkeypatch):
    # its own name: the previous test's last call may still be running (then it is "busy")
    monkeypatch.setattr(fakes, "sleepy_stop", _sleeper(0.2), raising=False)
    three = tuple(ClaimEntry("C11", f"{fakes.HERE}:sleepy_stop", ("rope",)) for _ in range(3))
    seen = []
    cache = board.BoardCache()
    result = cache.get(fake_loaded(), registry=three, should_stop=lambda: len(seen) >= 2,
                       progress=lambda done, total, claim: seen.append((done, total, claim)))
    assert [row.error for row in result.rows] == [None, board.STOPPED, board.STOPPED]
    assert not result.complete and cache.cached(fake_loaded(), three) is None
    assert "Stopped before every claim had run" in board.summary(result, "en")
    assert seen[:2] == [(0, 3, "C11"), (1, 3, "C11")] and seen[-1] == (3, 3, "")


# ----------------------------------------------------------------------------- the cache

def _counting(calls):
    def evidence(loaded):
        calls.append(loaded.dtype)
        time.sleep(0.1)
        return fakes.passing(loaded)
    return evidence


def test_the_cache_answers_a_revisit_and_rerun_recomputes(monkeypatch):
    calls: list = []
    monkeypatch.setattr(fakes, "counting", _counting(calls), raising=False)
    registry = (ClaimEntry("C11", f"{fakes.HERE}:counting", ("rope",)),)
    cache = board.BoardCache()
    first = cache.get(fake_loaded(), registry=registry)
    started = time.perf_counter()
    assert cache.get(fake_loaded(), registry=registry) is first     # a revisit: instant
    assert time.perf_counter() - started < 0.05 and len(calls) == 1
    again = cache.get(fake_loaded(), registry=registry, rerun=True)
    assert again is not first and again.computed_at >= first.computed_at and len(calls) == 2
    assert cache.get(fake_loaded(), registry=registry) is again
    other = cache.get(fake_loaded(dtype="torch.bfloat16"), registry=registry)   # another key
    assert other is not again and other.dtype == "bfloat16" and len(calls) == 3
    # another registry (a fake one beside the real one) never shares an entry
    assert cache.cached(fake_loaded(), fakes.FAST_REGISTRY) is None


def test_visitors_asking_at_once_share_one_board(monkeypatch):
    calls: list = []
    monkeypatch.setattr(fakes, "counting", _counting(calls), raising=False)
    registry = (ClaimEntry("C11", f"{fakes.HERE}:counting", ("rope",)),)
    cache = board.BoardCache()
    results = []
    threads = [threading.Thread(target=lambda rerun=(i % 2 == 1): results.append(
        cache.get(fake_loaded(), registry=registry, rerun=rerun))) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6
    # one board for all who asked plainly; a rerun asked while it ran is answered by it or
    # by one later board: never six
    assert len(calls) <= 3 and len({id(r) for r in results}) == len(calls)


def test_evidence_refuses_unknown_claims_and_non_bool_verdicts():
    with pytest.raises(ValueError):
        Evidence("C23", True, (), "k", "rope", "s")
    with pytest.raises(TypeError):
        Evidence("C1", 1, (), "k", "rope", "s")


def test_a_consistency_check_is_shown_apart_and_a_broken_one_fails_the_row():
    """Consistency checks (fixed by construction) are listed under the evidence, marked ✓ or ✗;
    the criterion's verdict does not rest on them, but a broken one fails the row."""
    from explorer.claims.evidence import Consistency, Measure

    def row(holds: bool) -> board.Row:
        check = Consistency("claims.k.moe_routes_to_k", holds, (Measure("claims.m.moe_off_k", 0 if holds else 3),))
        found = Evidence("C14", True, (Measure("claims.m.time_ratio_k", 2.0, "×"),), "claims.C14.criterion",
                         "moe", "s", consistency=(check,))
        return board.Row("C14", "about.c.C14", found, None)

    sound, broken = row(True), row(False)
    assert sound.verdict == "pass" and broken.verdict == "fail"
    for lang in ("en", "zh"):
        cell = board._evidence_cell(broken, lang)
        evidence_part, checks = cell.split("\n")
        assert "×" in evidence_part and board._text("claims.consistency", lang) in checks
        assert "✗ " + board._text("claims.k.moe_routes_to_k", lang) in checks
        assert "✓ " in board._evidence_cell(sound, lang)
    with pytest.raises(TypeError):
        Consistency("claims.k.moe_routes_to_k", 1)
