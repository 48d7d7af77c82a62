"""Issue 27 finding 11 (checkpoints): a converted checkpoint was trusted on its marker file
alone, so weights changed after the conversion (by hand, or by another user of a shared cache)
were loaded as the embedded model. The marker now records the sha256 of each weights file as
written; a folder whose weights differ is converted again, with a log line saying why."""
from __future__ import annotations

import hashlib
import json
import logging

import explorer.checkpoints as C
from explorer.checkpoints import conversion
from tests.checkpoints.test_checkpoints import fake_entry  # noqa: F401 -- the fixture


def _marker(folder):
    return json.loads((folder / C.MARKER_FILE).read_text())


def test_the_marker_records_the_sha256_of_each_weights_file(fake_entry):  # noqa: F811
    entry, _, _ = fake_entry
    folder = C.prepare_embedded(entry.name)
    weights = (folder / "model.safetensors").read_bytes()
    assert _marker(folder)["sha256"] == {"model.safetensors": hashlib.sha256(weights).hexdigest()}
    assert C.is_complete(folder) and conversion.conversion_problem(folder) is None


def test_weights_changed_after_the_marker_are_refused_and_converted_again(fake_entry, caplog):  # noqa: F811
    entry, loads, _ = fake_entry
    folder = C.prepare_embedded(entry.name)
    weights = folder / "model.safetensors"
    original = weights.read_bytes()
    changed = bytearray(original)
    changed[-1] ^= 0x01                                  # one bit of one weight
    weights.write_bytes(bytes(changed))
    assert not C.is_complete(folder)
    problem = conversion.conversion_problem(folder)
    assert problem == "model.safetensors changed after it was converted (sha256 mismatch)"

    seen = []
    with caplog.at_level(logging.WARNING, logger="explorer.checkpoints"):
        assert C.prepare_embedded(entry.name, progress=lambda f, m: seen.append(m)) == folder
    assert len(loads) == 2                               # converted again, not trusted
    assert weights.read_bytes() != bytes(changed) and C.is_complete(folder)   # a fresh conversion
    assert f"{entry.name}: {problem}; converting it again" in caplog.text
    assert seen[0].startswith(f"{entry.name}: {problem}; converting again")


def test_an_added_or_renamed_weights_file_is_refused(fake_entry):  # noqa: F811
    entry, _, _ = fake_entry
    folder = C.prepare_embedded(entry.name)
    (folder / "extra.safetensors").write_bytes((folder / "model.safetensors").read_bytes())
    assert conversion.conversion_problem(folder) == (
        "its weights files (extra.safetensors, model.safetensors) are not the ones written at "
        "conversion (model.safetensors)")
    (folder / "extra.safetensors").unlink()
    assert C.is_complete(folder)


def test_a_marker_without_digests_is_not_trusted(fake_entry):  # noqa: F811
    """A folder converted before the marker carried digests is converted again (so is one of
    another format)."""
    entry, loads, _ = fake_entry
    folder = C.prepare_embedded(entry.name)
    marker = _marker(folder)
    del marker["sha256"]
    (folder / C.MARKER_FILE).write_text(json.dumps({**marker, "format_version": C.FORMAT_VERSION - 1}))
    assert conversion.conversion_problem(folder) == "converted by an older version of the app"
    (folder / C.MARKER_FILE).write_text(json.dumps(marker))
    assert conversion.conversion_problem(folder) == "its marker records no sha256 of the weights"
    C.prepare_embedded(entry.name)
    assert len(loads) == 2 and C.is_complete(folder)
