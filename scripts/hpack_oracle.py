#!/usr/bin/env python3
"""Writes crates/server/tests/data/hpack-python.txt: header blocks made by
Python's `hpack` encoder (pip install hpack==4.2.0), a second HPACK
implementation, for crates/server/tests/hpack_oracle.rs to decode.

One connection per paragraph; per block one line:
    <hex block> <name hex>=<value hex>,...
A line `table <size>` changes the encoder's table size (the block after it
starts with a size update). Deterministic (seeded).
"""
import random
import sys
from pathlib import Path

import hpack

SEED = 7541
random.seed(SEED)
NAMES = [":method", ":path", ":scheme", ":authority", "user-agent", "accept",
         "accept-encoding", "cookie", "content-type", "x-request-id",
         "x-forwarded-for", "cache-control", "if-none-match", "referer"]


def value():
    kind = random.random()
    if kind < 0.3:
        return random.choice(["GET", "POST", "/", "/index.html", "http", "https",
                              "gzip, deflate", "text/html", "no-cache"])
    length = random.choice([0, 1, 5, 20, 100, 300])
    return "".join(chr(random.randint(0x20, 0x7e)) for _ in range(length))


def main(out):
    lines = []
    for connection in range(40):
        encoder = hpack.Encoder()
        huffman = connection % 2 == 0
        for block in range(random.randint(1, 12)):
            if random.random() < 0.1:
                size = random.choice([0, 64, 256, 1024, 4096])
                encoder.header_table_size = size
                lines.append(f"table {size}")
            headers = []
            for _ in range(random.randint(0, 10)):
                name = random.choice(NAMES + [f"x-custom-{random.randint(0, 30)}"])
                sensitive = random.random() < 0.05
                headers.append(hpack.HeaderTuple(name, value()) if not sensitive
                               else hpack.NeverIndexedHeaderTuple(name, value()))
            wire = encoder.encode(headers, huffman=huffman)
            fields = ",".join(f"{n.encode().hex()}={v.encode().hex()}" for n, v in headers)
            lines.append(f"{wire.hex()} {fields}")
        lines.append("")
    Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "crates/server/tests/data/hpack-python.txt")
