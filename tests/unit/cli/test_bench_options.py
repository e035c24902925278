"""``fusion bench``'s options that are checked before any server is asked."""

from __future__ import annotations

import pytest

from fusion.cli import parser


def test_the_fanout_page_defaults_to_the_pipelines_and_takes_a_size() -> None:
    assert parser.build().parse_args(["bench", "--fanout"]).fanout_page == 25_000
    args = parser.build().parse_args(["bench", "--fanout", "--fanout-page", "5000"])
    assert args.fanout_page == 5_000


@pytest.mark.parametrize("page", ["0", "-5", "1000001", "many"])
def test_a_fanout_page_the_pipeline_file_would_refuse_is_a_usage_error(
    page: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser.build().parse_args(["bench", "--fanout", "--fanout-page", page])
    assert stopped.value.code == 2
    assert (
        f"--fanout-page: {page!r}: a number of keys from 1 to 1,000,000" in capsys.readouterr().err
    )
