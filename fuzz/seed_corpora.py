#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ from tests/vectors/vectors.jsonl and tests/captures/*.bin.

Each seed is written under the hex SHA-1 of its content (as libFuzzer names its own finds), so
running this twice adds nothing. The corpora are checked in; `cargo xtask fuzz` keeps the seeds
that add coverage when it next minimises them.
"""
import hashlib
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
corpus = root / "fuzz" / "corpus"


def put(target, data):
    folder = corpus / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def first_frames(stream, limit):
    """The whole frames of `stream` that fit in `limit` bytes (the stream itself if it fits)."""
    if len(stream) <= limit:
        return stream
    end = 0
    while end + 4 <= len(stream):
        frame_end = end + 4 + int.from_bytes(stream[end:end + 4], "big")
        if frame_end > limit:
            break
        end = frame_end
    return stream[:end]


def main():
    streams = {"client": [], "server": []}
    for line in (root / "tests" / "vectors" / "vectors.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        request = json.loads(line)["request"]
        if request["op"] == "decode":
            stream = b"".join(bytes.fromhex(c) for c in request["chunks"])
            if len(stream) > 65536:
                continue
            streams[request["side"]].append(stream)
            # decode_cbor: default-ish limits (7 header bytes), then each frame payload.
            offset = 0
            while offset + 4 <= len(stream):
                length = int.from_bytes(stream[offset:offset + 4], "big")
                put("decode_cbor", b"\xff\xff\xff\x0f\x42\x40\x20" + stream[offset + 4:offset + 4 + length])
                offset += 4 + length
        elif request["op"] == "decodeCbor":
            put("decode_cbor", b"\xff\xff\xff\x0f\x42\x40\x20" + bytes.fromhex(request["hex"]))
    for capture in sorted((root / "tests" / "captures").glob("*.bin")):
        side = "server" if "server" in capture.name else "client"
        streams[side].append(capture.read_bytes())
    for side, target, flag in (("client", "client_decoder", 0), ("server", "server_decoder", 1)):
        for stream in streams[side]:
            put(target, stream)
            # chunking: control byte (side, 3 cuts) and the cut points, then the stream.
            put("chunking", bytes([flag | 3 << 1, 0, 1, 0, 7, 0, 30]) + stream)
    for i in range(64):
        put("round_trip", hashlib.sha256(str(i).encode()).digest() * 8)
        # connection_pair: operation lists decoded from arbitrary bytes.
        put("connection_pair", hashlib.sha256(b"pair" + str(i).encode()).digest() * 8)
    # connection_peer: control byte (end, chunk size, reading, transmit limit), then the peer's
    # stream: the captured sessions and every decode vector of the other side, each cut to its
    # frames within the first 8 KiB so that runs stay fast.
    for capture in sorted((root / "tests" / "captures").glob("*.bin")):
        end = 1 if "server" in capture.name else 0
        for control in (end, end | 3 << 1, end | 7 << 1, end | 0x10 | 5 << 1, end | 0x20 | 1 << 1):
            put("connection_peer", bytes([control]) + first_frames(capture.read_bytes(), 8192))
    for side, end in (("client", 0), ("server", 1)):
        for stream in streams[side]:
            put("connection_peer", bytes([end | 7 << 1]) + first_frames(stream, 8192))
    for target in sorted(p.name for p in corpus.iterdir()):
        print(f"{target}: {len(list((corpus / target).iterdir()))} seeds")


if __name__ == "__main__":
    main()
