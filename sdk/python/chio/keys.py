"""Ed25519 keys (SPEC §2): PKCS#8 PEM files, and the "ed25519:<hex>" text
form of public keys."""

from __future__ import annotations

import functools
import os
import stat
import warnings

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ._wire import _read_file
from .errors import BadRequest

# A PEM key file is ~120 bytes; anything much larger is not one.
MAX_KEY_FILE_BYTES = 64 << 10


# Ed25519's field prime and curve constant d = -121665/121666 (RFC 8032).
_P = 2**255 - 19
_D = -121665 * pow(121666, _P - 2, _P) % _P
# The y coordinates of the eight points of small order: the identity (1),
# the point of order 2 (-1), those of order 4 (0) and of order 8 (±y8).
_Y8 = 0x7A03AC9277FDC74EC6CC392CFA53202A0F67100D760B3CBA4FD84D3D706A17C7
_SMALL_ORDER_Y = frozenset({1, _P - 1, 0, _Y8, _P - _Y8})
# ℓ, the order of the base point B: every real key aB is in the subgroup of
# order ℓ. A point A+T (T of small order) is not: [ℓ](A+T) = [ℓ]T ≠ identity.
_L = 2**252 + 27742317777372353535851937790883648493
# A square root of -1 mod p (RFC 8032 §5.1.3, step 3).
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def public_key_bytes(text: str) -> bytes:
    """The raw 32 bytes of a public key in text form ("ed25519:" + 64
    lowercase hex), refused (ValueError) unless it is a canonical encoding
    of a curve point not of small order (SPEC §2, as the Go implementation's
    keys.ParsePublicKey): the identity key, for one, verifies a forged
    signature of every message under OpenSSL's check. Refused too, as Go
    refuses it (keys.ErrTorsionKey): a point with a torsion component, A+T
    (T of small order), which no Ed25519 key generator makes and for which
    A's private key also signs (cofactorless, whenever [k]T is the
    identity): one private key would pass as two keys."""
    hexpart = text[8:] if isinstance(text, str) and text.startswith("ed25519:") else ""
    if len(hexpart) != 64 or not all(c in "0123456789abcdef" for c in hexpart):
        raise ValueError("must be ed25519:<64 lowercase hex>")
    raw = bytes.fromhex(hexpart)
    n = int.from_bytes(raw, "little")
    y, negative = n & ((1 << 255) - 1), n >> 255
    if y >= _P:
        raise ValueError("is a non-canonical encoding (y ≥ p)")
    # x² = (y² - 1) / (d·y² + 1) must have a square root; x = 0 has no sign.
    xx = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    if xx == 0 and negative:
        raise ValueError("is a non-canonical encoding (x = 0 with the sign bit set)")
    if xx != 0 and pow(xx, (_P - 1) // 2, _P) != 1:
        raise ValueError("is not a point of the curve")
    if y in _SMALL_ORDER_Y:
        raise ValueError("is a weak key (a point of small order)")
    if not _in_prime_order_subgroup(raw):
        raise ValueError(
            "is a weak key (it has a torsion component: A+T with T of small order, not in the prime-order subgroup; "
            "no Ed25519 key generator makes such a key, and the private key of A also signs for it)"
        )
    return raw


@functools.lru_cache(maxsize=64)
def _in_prime_order_subgroup(raw: bytes) -> bool:
    """Whether [ℓ]A is the identity, A the point that raw encodes (a
    canonical encoding of a curve point, as public_key_bytes has checked).
    A scalar multiplication: cached, as a tool server passes its one pinned
    kernel key on every call."""
    n = int.from_bytes(raw, "little")
    y, negative = n & ((1 << 255) - 1), n >> 255
    # Decompression (RFC 8032 §5.1.3): x² = u/v, u = y² - 1, v = d·y² + 1;
    # the candidate root (u/v)^((p+3)/8) is x or x/√-1; the sign bit picks
    # x or p - x.
    xx = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    x = pow(xx, (_P + 3) // 8, _P)
    if x * x % _P != xx:
        x = x * _SQRT_M1 % _P
    if x * x % _P != xx:
        raise ValueError("not a curve point")  # public_key_bytes refused it already
    if x & 1 != negative:
        x = _P - x
    # [ℓ]A by double-and-add, in extended coordinates (X:Y:Z:T), x = X/Z,
    # y = Y/Z, x·y = T/Z; the identity is (0:1:1:0).
    a, q = (x, y, 1, x * y % _P), (0, 1, 1, 0)
    for bit in bin(_L)[2:]:
        q = _add(q, q)
        if bit == "1":
            q = _add(q, a)
    return q[0] == 0 and q[1] == q[2]


def _add(p1: tuple, p2: tuple) -> tuple:
    """Point addition on edwards25519 in extended coordinates (RFC 8032
    §5.1.4); complete, so it doubles too."""
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % _P
    b = (y1 + x1) * (y2 + x2) % _P
    c = 2 * _D * t1 * t2 % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


class KeyFileModeWarning(UserWarning):
    """A private key file that group or others may read (any bit of mode
    0o077): whoever reads it signs as its holder."""


def _warn_if_open_to_others(path: str | os.PathLike, public_key: str) -> None:
    """Warn (KeyFileModeWarning) when others may read or write the key file
    at path. A warning, not a refusal: keys are copied between machines
    whose modes the SDK does not control, and the repository's demo keys
    check out 0644. Outside POSIX, modes say nothing (access is by ACL)."""
    if os.name != "posix":
        return
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return
    if mode & 0o077:
        warnings.warn(
            f"chio: key file {os.fspath(path)} has mode {oct(mode)}: other users may read it and sign as "
            f"{public_key}; run `chmod 600 {os.fspath(path)}`",
            KeyFileModeWarning,
            stacklevel=3,
        )


class PrivateKey:
    """An agent's or approver's Ed25519 signing key. Its repr shows only the
    public key."""

    __slots__ = ("_key", "public_key")

    def __init__(self, key: Ed25519PrivateKey):
        if not isinstance(key, Ed25519PrivateKey):
            raise BadRequest("chio: not an Ed25519 private key")
        self._key = key
        raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.public_key = "ed25519:" + raw.hex()  #: text form, e.g. "ed25519:39…"

    @classmethod
    def from_seed(cls, seed: bytes) -> "PrivateKey":
        """The key for a 32-byte seed (tests; deterministic)."""
        if len(seed) != 32:
            raise BadRequest("chio: an Ed25519 seed is 32 bytes")
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @classmethod
    def from_pem(cls, data: bytes | str) -> "PrivateKey":
        """Decode a PKCS#8 PEM Ed25519 private key (`chio keygen` writes one)."""
        if isinstance(data, str):
            data = data.encode("ascii", "replace")
        if b"-----BEGIN PRIVATE KEY-----" not in data:
            raise BadRequest("chio: no PKCS#8 PRIVATE KEY PEM block")
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as e:
            raise BadRequest(f"chio: bad private key: {e}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise BadRequest("chio: the private key is not Ed25519")
        return cls(key)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "PrivateKey":
        """Read a PKCS#8 PEM key file. One that group or others may read
        draws a KeyFileModeWarning (it still loads)."""
        key = cls.from_pem(_read_file(path, MAX_KEY_FILE_BYTES, "key"))
        _warn_if_open_to_others(path, key.public_key)
        return key

    def sign(self, message: bytes) -> bytes:
        """The raw 64-byte Ed25519 signature of message. Callers sign
        domain-separated messages (chio.signing.message)."""
        return self._key.sign(message)

    def __repr__(self) -> str:
        return f"PrivateKey({self.public_key})"
