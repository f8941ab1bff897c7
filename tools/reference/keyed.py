#!/usr/bin/env python3
"""Independent reference for keyed sampling (docs/privacy/sample-threshold.md, "Keyed sampling").

Written from the SipHash paper (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012),
the BLAKE3 specification (O'Connor, Aumasson, Neves, Wilcox-O'Hearn, 2020) and the document
above, NOT from the Rust code in `crates/tally-core/src/sampling/keyed.rs`: a pure Python
SipHash-2-4 (the PRF of the coins and row scores), checked against the paper's test vector; a
pure Python BLAKE3 for inputs of one chunk (at most 1024 bytes, all the key derivation needs),
checked against the specification's hash of the empty input; and exact rationals for the
coin's threshold. Clients bounded to k items keep the k distinct items of smallest score
PRF(0x03 || round || len(client) || client || item) and flip one coin per item,
PRF(0x04 || round || len(client) || client || item) < threshold.

Usage (from anywhere):

    python3 tools/reference/keyed.py            # (re)write the JSON vectors
    python3 tools/reference/keyed.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import json
import struct
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (the command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__, "crates/tally-core/tests/test_vectors")

KEY_CONTEXT = "tally 2026-11 keyed sampling key v2 siphash-2-4"

IV = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19]
PERMUTATION = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8]
CHUNK_START, CHUNK_END, ROOT = 1, 2, 8
KEYED_HASH, DERIVE_KEY_CONTEXT, DERIVE_KEY_MATERIAL = 16, 32, 64
MASK = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF


def rotr(x: int, n: int) -> int:
    return ((x >> n) | (x << (32 - n))) & MASK


def g(v: list[int], a: int, b: int, c: int, d: int, x: int, y: int) -> None:
    v[a] = (v[a] + v[b] + x) & MASK
    v[d] = rotr(v[d] ^ v[a], 16)
    v[c] = (v[c] + v[d]) & MASK
    v[b] = rotr(v[b] ^ v[c], 12)
    v[a] = (v[a] + v[b] + y) & MASK
    v[d] = rotr(v[d] ^ v[a], 8)
    v[c] = (v[c] + v[d]) & MASK
    v[b] = rotr(v[b] ^ v[c], 7)


def compress(cv: list[int], block: bytes, length: int, flags: int) -> list[int]:
    """The compression function with counter 0; the full 16-word output."""
    m = list(struct.unpack("<16I", block))
    v = cv[:] + IV[:4] + [0, 0, length, flags]
    for round_ in range(7):
        g(v, 0, 4, 8, 12, m[0], m[1])
        g(v, 1, 5, 9, 13, m[2], m[3])
        g(v, 2, 6, 10, 14, m[4], m[5])
        g(v, 3, 7, 11, 15, m[6], m[7])
        g(v, 0, 5, 10, 15, m[8], m[9])
        g(v, 1, 6, 11, 12, m[10], m[11])
        g(v, 2, 7, 8, 13, m[12], m[13])
        g(v, 3, 4, 9, 14, m[14], m[15])
        if round_ < 6:
            m = [m[PERMUTATION[i]] for i in range(16)]
    return [v[i] ^ v[i + 8] for i in range(8)] + [v[i + 8] ^ cv[i] for i in range(8)]


def blake3_one_chunk(key_words: list[int], data: bytes, mode: int) -> bytes:
    """The first 32 bytes of BLAKE3 of `data` (one chunk) with key words and mode flags."""
    assert len(data) <= 1024, "one chunk only"
    blocks = [data[i : i + 64] for i in range(0, len(data), 64)] or [b""]
    cv = key_words
    for index, block in enumerate(blocks):
        flags = mode
        if index == 0:
            flags |= CHUNK_START
        if index == len(blocks) - 1:
            flags |= CHUNK_END | ROOT
        out = compress(cv, block.ljust(64, b"\0"), len(block), flags)
        cv = out[:8]
    return struct.pack("<8I", *cv)


def derive_key(context: str, material: bytes) -> bytes:
    """The 16-byte SipHash key: the first 16 bytes of BLAKE3's key derivation."""
    context_key = blake3_one_chunk(IV, context.encode(), DERIVE_KEY_CONTEXT)
    return blake3_one_chunk(list(struct.unpack("<8I", context_key)), material, DERIVE_KEY_MATERIAL)[:16]


def rotl64(x: int, n: int) -> int:
    return ((x << n) | (x >> (64 - n))) & MASK64


def sip_round(v: list[int]) -> None:
    v[0] = (v[0] + v[1]) & MASK64
    v[1] = rotl64(v[1], 13) ^ v[0]
    v[0] = rotl64(v[0], 32)
    v[2] = (v[2] + v[3]) & MASK64
    v[3] = rotl64(v[3], 16) ^ v[2]
    v[0] = (v[0] + v[3]) & MASK64
    v[3] = rotl64(v[3], 21) ^ v[0]
    v[2] = (v[2] + v[1]) & MASK64
    v[1] = rotl64(v[1], 17) ^ v[2]
    v[2] = rotl64(v[2], 32)


def siphash_2_4(key: bytes, message: bytes) -> int:
    """SipHash-2-4 of `message` under the 16-byte `key`, as the paper's 64-bit integer (its
    output bytes are this integer little-endian)."""
    k0, k1 = struct.unpack("<2Q", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]
    # The last word holds the remaining bytes and, in its top byte, the length mod 256.
    tail = len(message) - len(message) % 8
    words = [int.from_bytes(message[i : i + 8], "little") for i in range(0, tail, 8)]
    words.append(int.from_bytes(message[tail:], "little") | (len(message) % 256) << 56)
    for m in words:
        v[3] ^= m
        sip_round(v)
        sip_round(v)
        v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        sip_round(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def prf(key: bytes, message: bytes) -> int:
    """The PRF of the coins and row scores: SipHash-2-4's 64-bit output."""
    return siphash_2_4(key, message)


def coin_threshold(rate: float) -> int:
    return int(Fraction(rate) * 2**64)  # floor for a non-negative rational


def coin(key: bytes, threshold: int, round_: int, client: str) -> bool:
    return prf(key, b"\x01" + round_.to_bytes(8, "little") + client.encode()) < threshold


def row_score(key: bytes, round_: int, client: str, item: str, occurrence: int) -> int:
    client_bytes = client.encode()
    message = (
        b"\x02"
        + round_.to_bytes(8, "little")
        + occurrence.to_bytes(8, "little")
        + len(client_bytes).to_bytes(8, "little")
        + client_bytes
        + item.encode()
    )
    return prf(key, message)


def item_message(tag: bytes, round_: int, client: str, item: str) -> bytes:
    client_bytes = client.encode()
    return tag + round_.to_bytes(8, "little") + len(client_bytes).to_bytes(8, "little") + client_bytes + item.encode()


def item_coin(key: bytes, threshold: int, round_: int, client: str, item: str) -> bool:
    return prf(key, item_message(b"\x04", round_, client, item)) < threshold


def chosen_items(key: bytes, round_: int, client: str, items: list[str], k: int) -> list[str]:
    """The k distinct items of smallest item score (ties to the smaller item), sorted."""
    distinct = sorted(set(items), key=str.encode)
    scored = sorted((prf(key, item_message(b"\x03", round_, client, item)), item.encode(), item) for item in distinct)
    return sorted((s[2] for s in scored[:k]), key=str.encode)


def chosen_item(key: bytes, round_: int, client: str, items: list[str]) -> str:
    """The item of the row of smallest score; rows holding equal items are numbered 0, 1, ...
    and ties of the score go to the smaller item (by UTF-8 bytes)."""
    scored = []
    seen: dict[str, int] = {}
    for item in sorted(items, key=str.encode):
        occurrence = seen.get(item, 0)
        seen[item] = occurrence + 1
        scored.append((row_score(key, round_, client, item, occurrence), item.encode(), item))
    return min(scored)[2]


def vectors() -> dict:
    # The specification's hash of the empty input checks the BLAKE3 above.
    empty = blake3_one_chunk(IV, b"", 0).hex()
    assert empty == "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262", empty
    # The paper's test vector (its Appendix A): key 00 01 .. 0f, message 00 01 .. 0e.
    paper = siphash_2_4(bytes(range(16)), bytes(range(15)))
    assert paper == 0xA129CA6149BE45E5, hex(paper)
    # The reference implementation's vector of the empty message under the same key.
    empty_message = siphash_2_4(bytes(range(16)), b"")
    assert empty_message.to_bytes(8, "little").hex() == "310e0edd47db6f72", hex(empty_message)
    cases = []
    for secret in ["pin", "a longer secret, with spaces and ünïcödé"]:
        key = derive_key(KEY_CONTEXT, secret.encode())
        for rate in [0.5, 0.3, 0.01, 1e-5, 2.0**-70]:
            threshold = coin_threshold(rate)
            for round_ in [0, 3]:
                cases.append(
                    {
                        "secret": secret,
                        "rate": repr(rate),
                        "threshold": str(threshold),
                        "round": round_,
                        "coins": "".join("1" if coin(key, threshold, round_, str(c)) else "0" for c in range(64)),
                    }
                )
    rows = []
    key = derive_key(KEY_CONTEXT, b"rows")
    for client in ["u1", "u2", "client with a long id", "7"]:
        for items in [["a"], ["b", "a"], ["a", "b", "a", "c"], ["x", "x", "x"], ["w1", "w2", "w3", "w4", "w5"]]:
            rows.append(
                {
                    "client": client,
                    "items": items,
                    "score_first_row": str(row_score(key, 0, client, sorted(items)[0], 0)),
                    "chosen": chosen_item(key, 0, client, items),
                }
            )
    bounded = []
    threshold = coin_threshold(0.3)
    for client in ["u1", "client with a long id", "7"]:
        for items in [["a"], ["b", "a", "b"], ["w1", "w2", "w3", "w4", "w5", "w6", "w2"]]:
            for k in [1, 2, 4]:
                bounded.append(
                    {
                        "client": client,
                        "items": items,
                        "max_items": k,
                        "chosen": chosen_items(key, 2, client, items, k),
                        "item_coins": "".join("1" if item_coin(key, threshold, 2, client, it) else "0" for it in items),
                    }
                )
    return {"row_secret": "rows", "coins": cases, "rows": rows, "item_coin_rate": 0.3, "bounded": bounded}


def generate(log: vectors_io.Log) -> dict[str, str]:
    return {"keyed.json": json.dumps(vectors(), indent=1, ensure_ascii=False) + "\n"}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
