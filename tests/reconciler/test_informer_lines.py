"""A watch stream's lines, whatever its chunks: kube-apiserver's chunks need not end at a line
(Go buffers the response), and the stand-in sends the events that are ready together in one."""

from __future__ import annotations

import typing as t

import pytest

from webhook.kube.informer import lines


class Stream:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, amt: int | None, decode_content: bool) -> t.Iterator[bytes]:
        return iter(self.chunks)


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        pytest.param([b'{"a":1}\n'], [b'{"a":1}'], id="one-line-per-chunk"),
        pytest.param([b'{"a":1}\n{"b":2}\n'], [b'{"a":1}', b'{"b":2}'], id="two-lines-in-one-chunk"),
        pytest.param([b'{"a"', b":1}\n"], [b'{"a":1}'], id="a-line-over-two-chunks"),
        pytest.param(
            [b'{"a"', b":", b"1}\n{", b'"b":2}\n'], [b'{"a":1}', b'{"b":2}'], id="lines-over-many-chunks"
        ),
        pytest.param([b'{"a":1}\n\n'], [b'{"a":1}', b""], id="an-empty-line-is-kept"),
        pytest.param([b'{"a":1}\n{"b"'], [b'{"a":1}'], id="an-unterminated-tail-is-not-a-line"),
        pytest.param([], [], id="no-chunks"),
    ],
)
def test_lines_are_whole_whatever_the_chunks(chunks: list[bytes], expected: list[bytes]) -> None:
    assert list(lines(Stream(chunks))) == expected
