"""``mem.admin`` (localmem/admin.py): the store's file behind a Memory, through the Memory's own
connection, which a key change reopens for the Memory and its other parts too."""

from __future__ import annotations

import io

import pytest

from localmem import Config, Memory
from localmem.errors import LocalmemError
from localmem.store import cipher
from tests.fakes import HashEmbedder
from tests.helpers import open_memory


def test_export_and_restore_through_admin_round_trip(mem, tmp_path):
    mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00", conversation="c")
    out = io.StringIO()
    written = mem.admin.export(out)
    path = tmp_path / "export.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    with open_memory(tmp_path / "copy.db", namespace="test", embedder=HashEmbedder()) as copy:
        restored = copy.admin.restore(path)
        assert restored.counts["message"] == written.counts["messages"] == 1
        assert [h.text for h in copy.search("puppy", k=1)] == ["Ann: I adopted a puppy called Rex"]


def test_admin_stops_with_its_memory_and_says_what_it_cannot_do(mem, tmp_path):
    if mem.admin.encrypted:  # the suite's encrypted run (--stores=encrypted)
        with pytest.raises(LocalmemError, match="is already encrypted; change its passphrase with rekey"):
            mem.admin.encrypt("a new passphrase")
    else:
        with pytest.raises(LocalmemError, match="is not encrypted; nothing to do"):
            mem.admin.decrypt()
        with pytest.raises(LocalmemError, match="is not encrypted; encrypt it with encrypt"):
            mem.admin.rekey("a new passphrase")
    with Memory(":memory:", embedder=HashEmbedder(), config=Config(key_env=None)) as in_memory:  # never keyed
        with pytest.raises(LocalmemError, match="in-memory store cannot be encrypted"):
            in_memory.admin.encrypt("a passphrase")
    mem.close()
    with pytest.raises(LocalmemError, match="closed"):
        mem.admin.vacuum()


@pytest.mark.own_keys
@pytest.mark.plain_stores
@pytest.mark.skipif(cipher.cipher_version() is None, reason="needs the cipher build of apsw")
def test_a_key_change_reopens_the_one_connection_every_part_uses(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="test", embedder=HashEmbedder(), key=None) as mem:
        added = mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00")
        mem.admin.encrypt("Tr0ub4dor&3 horse-battery-STAPLE")
        assert mem.admin.encrypted and cipher.file_state(tmp_path / "m.db") == "encrypted"
        assert mem.browse.get(added.ref).text == "I adopted a puppy called Rex"
        assert mem.add("Ann", "Rex likes the beach", "2023-05-09T10:00:00").added
        assert mem.stats().messages == 2
