"""Files the board reads while a worker writes them (a pair's `done` and `failed` markers, a
checkpoint's `serve.json`) appear whole: a reader polling beside the writer never finds one empty
or cut (a board once stopped on "Expecting value: line 1 column 1" reading a `done` marker that
its worker was still writing)."""

import json
import threading

from evalpack.leaderboard.rundirs import DONE_MARKER, write_whole


def test_a_reader_beside_the_writer_only_ever_reads_the_whole_marker(tmp_path):
    marker = tmp_path / DONE_MARKER
    text = json.dumps({"command": ["x" * 200_000], "seconds": 1.0})
    stop, seen = threading.Event(), []

    def read() -> None:
        while not stop.is_set():
            if marker.is_file():
                seen.append(marker.read_text(encoding="utf-8"))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(200):
            write_whole(marker, text)
    finally:
        stop.set()
        reader.join()
    assert seen and all(read == text for read in seen)
    assert [path.name for path in tmp_path.iterdir()] == [DONE_MARKER]  # no temporary left
