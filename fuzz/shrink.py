"""Shrinks a fuzzer finding to a small body that shows the same finding, along protobuf's structure:
the body is read as a tree of fields (a length-delimited field that reads as a message is a
subtree), whole fields are dropped at every depth and the lengths written anew, then byte-level
passes finish. Only changes that keep the finding (``still``) are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

Still = Callable[[bytes], bool]


@dataclass
class Node:
    tag: bytes  # the field's key, as it was encoded
    wire: int
    payload: bytes  # a scalar's bytes, or a length-delimited field's contents
    children: list[Node] | None = None  # set when the contents read as fields
    rest: bytes = b""  # bytes after the last child that do not read as a field

    def encode(self) -> bytes:
        if self.wire != 2:
            return self.tag + self.payload
        inner = encode_fields(self.children, self.rest) if self.children is not None else self.payload
        return self.tag + _varint(len(inner)) + inner


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while i < len(data) and shift < 70:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i
    raise ValueError("bad varint")


def parse_fields(data: bytes, depth: int = 0) -> tuple[list[Node], bytes]:
    """The fields of ``data``, and whatever trails them that does not read as a field."""
    nodes: list[Node] = []
    i = 0
    while i < len(data):
        try:
            key, j = _read_varint(data, i)
            wire = key & 7
            if wire == 0:
                _, end = _read_varint(data, j)
                node = Node(data[i:j], 0, data[j:end])
            elif wire in (1, 5):
                end = j + (8 if wire == 1 else 4)
                if end > len(data):
                    raise ValueError("short")
                node = Node(data[i:j], wire, data[j:end])
            elif wire == 2:
                size, k = _read_varint(data, j)
                end = k + size
                if end > len(data):
                    raise ValueError("short")
                node = Node(data[i:j], 2, data[k:end])
                if depth < 12 and size:
                    children, rest = parse_fields(node.payload, depth + 1)
                    if children and not rest:
                        node.children = children
            else:
                raise ValueError("wire type")
        except ValueError:
            return nodes, data[i:]
        nodes.append(node)
        i = end
    return nodes, b""


def encode_fields(nodes: list[Node], rest: bytes = b"") -> bytes:
    return b"".join(n.encode() for n in nodes) + rest


def _lists(nodes: list[Node]) -> Iterator[list[Node]]:
    yield nodes
    for node in nodes:
        if node.children is not None:
            yield from _lists(node.children)


def _drop_fields(nodes: list[Node], rest: bytes, still: Still) -> bool:
    changed = False
    for siblings in list(_lists(nodes)):
        i = len(siblings) - 1
        while i >= 0:
            removed = siblings.pop(i)
            if still(encode_fields(nodes, rest)):
                changed = True
            else:
                siblings.insert(i, removed)
            i -= 1
    return changed


def _shorten_leaves(nodes: list[Node], rest: bytes, still: Still) -> bool:
    changed = False
    for siblings in list(_lists(nodes)):
        for node in siblings:
            if node.wire != 2 or node.children is not None:
                continue
            while node.payload:
                before = node.payload
                node.payload = before[: len(before) // 2]
                if not still(encode_fields(nodes, rest)):
                    node.payload = before
                    break
                changed = True
    return changed


def _bytes(body: bytes, still: Still) -> bytes:
    chunk = max(1, len(body) // 2)
    while chunk:
        i = 0
        while i < len(body):
            if still(smaller := body[:i] + body[i + chunk :]):
                body = smaller
            else:
                i += chunk
        chunk //= 2
    for i in range(len(body)):
        for simpler in (0, 1, 0x61):
            if body[i] != simpler and still(other := body[:i] + bytes([simpler]) + body[i + 1 :]):
                body = other
                break
    return body


def shrink(body: bytes, still: Still) -> bytes:
    """A body no larger than ``body`` for which ``still`` holds (it must hold for ``body``)."""
    nodes, rest = parse_fields(body)
    if still(encode_fields(nodes, rest)):  # lengths written minimally may already lose it
        while _drop_fields(nodes, rest, still) | _shorten_leaves(nodes, rest, still):
            pass
        body = encode_fields(nodes, rest)
    return _bytes(body, still)


__all__ = ["Node", "encode_fields", "parse_fields", "shrink"]
