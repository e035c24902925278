"""Building Fusion's JVM jar: cached by source digest, one-line errors when it cannot be.

Building it with the Eclipse compiler on a Java runtime without javac is
``tests/integration/test_without_a_jdk.py`` (it fetches the compiler).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from fusion.infra import jvm_code as jvm
from fusion.infra.errors import CompileError


def test_without_javac_and_no_fallback_compiler_the_error_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert jvm.find_javac() is None

    with pytest.raises(CompileError, match=r"no javac, and no Eclipse compiler to fall back on"):
        jvm.fusion_jar(tmp_path / "home")


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty source tree in place of Fusion's own."""
    package = tmp_path / "src" / "fusion" / "counter"
    package.mkdir(parents=True)
    monkeypatch.setattr(jvm, "SOURCES", tmp_path / "src")
    return package


def test_a_compile_error_is_one_line_naming_the_javac_error(tmp_path: Path, sources: Path) -> None:
    (sources / "Broken.java").write_text("package fusion.counter; class Broken { int x = ; }\n")

    with pytest.raises(jvm.CompileError, match=r"Broken\.java:1: error: illegal start") as caught:
        jvm.fusion_jar(tmp_path / "home")
    assert "\n" not in str(caught.value)
    assert not list((tmp_path / "home" / "artifacts").glob("*.jar"))  # nothing half-built


def test_the_jar_is_built_once_per_source_digest(tmp_path: Path, sources: Path) -> None:
    (sources / "Tiny.java").write_text("package fusion.counter; public class Tiny {}\n")

    jar = jvm.fusion_jar(tmp_path / "home")
    assert "fusion/counter/Tiny.class" in zipfile.ZipFile(jar).namelist()
    built = jar.stat().st_mtime_ns
    assert jvm.fusion_jar(tmp_path / "home").stat().st_mtime_ns == built  # cached

    (sources / "Tiny.java").write_text("package fusion.counter; public class Tiny { int x; }\n")
    assert jvm.fusion_jar(tmp_path / "home") != jar  # a changed source, a new jar
