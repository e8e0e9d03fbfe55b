"""pinch_replay on a folder with files it cannot use: each is skipped and named, the run goes on.

A line nested past the JSON parser's depth, a binary file, a file that is no
session, a FIFO (which would block whoever opens it) and a link to /dev/zero
(which never ends): none may stop the folder's other sessions, and none is
read past the size cap, or opened at all when it is not a regular file.
"""

import os
import threading
from io import StringIO

import pytest
from django.core.management import call_command

from routing.replay.corpus import CorpusError, load_sessions
from tests.support.claude_logs import review_session, write_log

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000


def replay(*args, timeout=120) -> tuple[str, str]:
    """(stdout, stderr) of pinch_replay, or a failure if it does not end (a FIFO read hangs)."""
    stdout, stderr, failed = StringIO(), StringIO(), []

    def run():
        try:
            call_command(
                "pinch_replay", *args, "--no-payback", "--table", stdout=stdout, stderr=stderr
            )
        except BaseException as error:  # noqa: BLE001 (reported below)
            failed.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "pinch_replay did not end"
    assert not failed, failed
    return stdout.getvalue(), stderr.getvalue()


@pytest.fixture
def folder(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "good.jsonl", review_session())
    write_log(logs / "deep-line.jsonl", review_session(), extra_lines=(DEEP,))
    (logs / "deep.json").write_text(DEEP)
    (logs / "binary.json").write_bytes(bytes(range(256)) * 64)
    (logs / "notes.jsonl").write_text("shopping list\nmilk\n")
    os.mkfifo(logs / "pipe.jsonl")
    os.symlink("/dev/zero", logs / "zero.jsonl")
    return logs


def test_a_folder_of_bad_files_replays_its_good_sessions_and_names_the_rest(default_config, folder):
    stdout, stderr = replay(str(folder))

    assert "good.jsonl" in stdout and "deep-line.jsonl" in stdout
    for name in ("deep.json", "binary.json", "notes.jsonl", "pipe.jsonl", "zero.jsonl"):
        assert f"skipped {folder / name}" in stderr, name
    assert "not a regular file" in stderr
    assert f"{folder / 'deep-line.jsonl'}: 1 unreadable line(s) skipped" in stderr


def test_a_file_over_the_size_cap_is_skipped_unread(default_config, folder, monkeypatch):
    big = folder / "big.jsonl"
    write_log(big, review_session(), extra_lines=("x" * 2_000_000,))
    opened = []
    real_open = open

    def watched(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", watched)

    stdout, stderr = replay(str(folder), "--max-file-mb", "1")

    assert f"skipped {big}: " in stderr and "over the limit of 1048576" in stderr
    assert str(big) not in opened
    assert "good.jsonl" in stdout


def test_the_loader_without_a_skip_list_still_refuses_a_bad_file(folder):
    with pytest.raises(CorpusError, match="binary.json"):
        load_sessions([folder / "binary.json"])


def test_only_bad_files_is_an_error_naming_them(tmp_path):
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe")
    skipped = []
    with pytest.raises(CorpusError, match="binary.json: not text"):
        load_sessions([tmp_path], skipped)
