"""EXPLORER_EXTRA_MODELS: the operator adds checkpoint folders (or Hub ids) to the model list;
visitors pick among the listed names only."""
import pytest
import torch

from explorer.checkpoints import EMBEDDED, CheckpointError, extra_checkpoints
from explorer.checkpoints.shipped import shipped_entries
from explorer.runtime import Runtime, UnknownModelError
from tests.unit.test_moe_parity import tiny_moe_hf


@pytest.fixture(scope="module")
def mixtral_folder(tmp_path_factory):
    hf = tiny_moe_hf("mixtral")
    folder = tmp_path_factory.mktemp("extra") / "tiny-mixtral"
    hf.save_pretrained(folder)
    return hf, folder


def test_an_extra_folder_is_listed_and_loads(mixtral_folder, monkeypatch):
    hf, folder = mixtral_folder
    monkeypatch.setenv("EXPLORER_EXTRA_MODELS", f" {folder} ,")
    runtime = Runtime("cpu", torch.float32, load_tokenizer=lambda folder: None)
    # the embedded models, the project's own shipped ones, then the operator's
    assert runtime.names() == [*EMBEDDED, *shipped_entries(), "tiny-mixtral"]
    assert runtime.default_name in EMBEDDED
    spec = runtime.spec("tiny-mixtral")
    assert "MixtralForCausalLM" in spec.description and "2 of 4 experts" in spec.description
    loaded = runtime.get("tiny-mixtral")
    assert loaded.config.family == "mixtral" and loaded.folder == folder.resolve()
    ids = torch.randint(3, 97, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert (loaded.model(ids) - hf(ids).logits).abs().max() <= 1e-5


def test_without_the_variable_only_the_projects_models(monkeypatch):
    monkeypatch.delenv("EXPLORER_EXTRA_MODELS", raising=False)
    assert Runtime("cpu", torch.float32).names() == [*EMBEDDED, *shipped_entries()]


def test_a_visitor_cannot_name_a_folder(mixtral_folder, monkeypatch):
    _, folder = mixtral_folder
    monkeypatch.delenv("EXPLORER_EXTRA_MODELS", raising=False)
    with pytest.raises(UnknownModelError):
        Runtime("cpu", torch.float32).get(str(folder))


PIN = "0123456789abcdef0123456789abcdef01234567"


def test_hub_ids_are_listed_without_downloading():
    extra = extra_checkpoints(f"allenai/OLMoE-1B-7B-0924@{PIN}")
    assert list(extra) == ["allenai/OLMoE-1B-7B-0924"]
    assert extra["allenai/OLMoE-1B-7B-0924"].folder is None
    assert extra["allenai/OLMoE-1B-7B-0924"].source == f"allenai/OLMoE-1B-7B-0924@{PIN}"


def test_an_unpinned_hub_id_is_refused(monkeypatch):
    """A branch can change under the server: a Hub id must name one commit."""
    for unpinned in ("allenai/OLMoE-1B-7B-0924", "allenai/OLMoE-1B-7B-0924@main",
                     "allenai/OLMoE-1B-7B-0924@0123abc"):
        with pytest.raises(CheckpointError, match="pinned to a commit, owner/name@<40-hex commit>"):
            extra_checkpoints(unpinned)


def test_a_pinned_hub_id_downloads_that_commit(monkeypatch, tmp_path):
    import huggingface_hub

    calls = []

    def fake_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs.get("revision")))
        raise ConnectionError("offline")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    with pytest.raises(CheckpointError, match="unreachable"):
        extra_checkpoints(f"someone/model@{PIN}")["someone/model"].prepare()
    assert calls == [("someone/model", PIN)]


def test_clashing_names_are_refused(mixtral_folder, tmp_path):
    _, folder = mixtral_folder
    with pytest.raises(CheckpointError, match="listed twice"):
        extra_checkpoints(f"{folder},{folder}")
    clash = tmp_path / next(iter(EMBEDDED))
    clash.mkdir()
    with pytest.raises(CheckpointError, match="listed twice"):
        extra_checkpoints(str(clash))
