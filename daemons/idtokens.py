"""HTCondor's IDTOKENS: signing keys as HTCondor stores them, tokens as HTCondor signs them.

Signing keys.  A key file holds the key's bytes XORed with ``DE AD BE EF`` repeated
(HTCondor's "simple scramble" of its password files).  The pool's key (key id
``POOL``, or an empty one) is the file ``SEC_TOKEN_POOL_SIGNING_KEY_FILE``
(``$(SEC_PASSWORD_DIRECTORY)/POOL``); any other key id names the file of that name
in ``SEC_PASSWORD_DIRECTORY``.  The pool key's bytes are used *twice over* (the key
followed by itself: what HTCondor does so that tokens signed before 8.9.12 still
verify), and with ``SEC_TOKEN_POOL_SIGNING_KEY_IS_PASSWORD`` cut at the first NUL.

Tokens.  An IDTOKEN is a JWT signed with HS256 under the key
``HKDF-SHA256(key bytes, salt="htcondor", info="master jwt", 32 bytes)``; its
header names the key (``kid``); its claims are ``sub`` (the identity,
``user@domain``), ``iss`` (the pool's TRUST_DOMAIN), ``iat``, ``exp`` (when a
lifetime is given), ``jti`` (16 random bytes, hex) and ``scope`` (the
authorization limits, ``condor:/READ condor:/WRITE``).  A token made here verifies
under HTCondor's recipe and the other way round (tests/security/test_idtokens.py
holds a vector made by an independent implementation of the recipe).

Checking a presented token (``check_claims``) follows HTCondor's server:
the issuer must be the pool's trust domain, the key must be one the pool has, the
token must not have expired, be older than SEC_TOKEN_MAX_AGE, or be revoked by
SEC_TOKEN_REVOCATION_EXPR (a ClassAd expression over the claims, true = revoked;
one that cannot be evaluated to a boolean revokes, as HTCondor's caution does).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from jobledger.eventcore.config import param_boolean
from jobledger.eventcore.errors import TokenError

_BEEF = bytes((0xDE, 0xAD, 0xBE, 0xEF))
POOL = "POOL"
KEY_BYTES = 64            # a new signing key's size (random bytes)
MAX_TOKEN_BYTES = 16384   # a token longer than this is refused unread
MAX_KEY_BYTES = 1 << 16   # a signing key file larger than this is refused
_SEGMENT = re.compile(r"^[A-Za-z0-9_-]*$")
Lookup = Callable[[str], "str | None"]   # a config lookup: name -> value or None


def scramble(data: bytes) -> bytes:
    """HTCondor's simple scramble of a password file (its own inverse)."""
    return bytes(b ^ _BEEF[i % 4] for i, b in enumerate(data))


def key_path(kid: str, get: Lookup) -> tuple[Path, bool]:
    """The file of signing key ``kid`` and whether it is the pool key."""
    if kid in ("", POOL):
        path = get("SEC_TOKEN_POOL_SIGNING_KEY_FILE") or ""
        if not path:
            directory = get("SEC_PASSWORD_DIRECTORY") or ""
            path = str(Path(directory) / POOL) if directory else ""
        if not path:
            raise TokenError("no pool signing key is set up in SEC_TOKEN_POOL_SIGNING_KEY_FILE")
        return Path(path), True
    if not re.fullmatch(r"[A-Za-z0-9_.@-]{1,200}", kid) or kid.startswith("."):
        raise TokenError(f"key id {kid!r} is not a signing key's name")
    directory = get("SEC_PASSWORD_DIRECTORY") or ""
    if not directory:
        raise TokenError("SEC_PASSWORD_DIRECTORY is undefined")
    return Path(directory) / kid, False


def key_bytes(scrambled: bytes, pool: bool, is_password: bool = False) -> bytes:
    """The bytes HKDF takes for a key file's contents ``scrambled`` (doubled for the pool key)."""
    if is_password and pool:
        scrambled = scrambled.split(b"\0", 1)[0]
    plain = scramble(scrambled)
    if is_password and pool:
        plain = plain.split(b"\0", 1)[0]
    return plain + plain if pool else plain


def read_signing_key(kid: str, get: Lookup) -> bytes:
    """The HKDF input of signing key ``kid`` (``TokenError`` naming the file if unreadable)."""
    path, pool = key_path(kid, get)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise TokenError(f"cannot read signing key {kid or POOL}: {exc.strerror or exc}", str(path)) from None
    if len(data) > MAX_KEY_BYTES:
        raise TokenError(f"signing key file is larger than {MAX_KEY_BYTES} bytes", str(path))
    if not data:
        raise TokenError("signing key file is empty", str(path))
    is_password = param_boolean("SEC_TOKEN_POOL_SIGNING_KEY_IS_PASSWORD",
                                get("SEC_TOKEN_POOL_SIGNING_KEY_IS_PASSWORD"), False)
    return key_bytes(data, pool, is_password)


def write_signing_key(path: Path, key: bytes | None = None) -> bytes:
    """Write a new signing key file (mode 0600, scrambled as HTCondor stores it) unless
    one exists; the key's raw bytes (those on disk, unscrambled)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    raw = key if key is not None else secrets.token_bytes(KEY_BYTES)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, scramble(raw))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, path)      # never replaces a key a concurrent start wrote first
    except FileExistsError:
        pass
    finally:
        os.unlink(temp)
    return scramble(path.read_bytes())


def hkdf(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    """32 bytes of HKDF-SHA256 (RFC 5869): one block of expand after extract."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def jwt_key(key: bytes) -> bytes:
    """HTCondor's JWT signing key from a signing key's bytes."""
    return hkdf(key, b"htcondor", b"master jwt")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    if not _SEGMENT.match(text):
        raise TokenError(f"the token's {what} is not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise TokenError(f"the token's {what} is not base64url") from None


def sign(signing_input: str, key: bytes) -> bytes:
    """The HS256 signature of ``header.payload`` under signing key bytes ``key``."""
    return hmac.new(jwt_key(key), signing_input.encode("ascii"), hashlib.sha256).digest()


def scope_of(authz: Iterable[str]) -> str:
    """The ``scope`` claim for authorization limits (``READ`` -> ``condor:/READ``)."""
    return " ".join(f"condor:/{level.strip().upper()}" for level in authz if level.strip())


def create_token(identity: str, issuer: str, key: bytes, kid: str = POOL, authz: Iterable[str] = (),
                 lifetime: int | None = None, now: int | None = None, jti: str | None = None) -> str:
    """A signed IDTOKEN, its claims as HTCondor's ``generate_token`` makes them.

    Made with PyJWT (a well-kept JWT library); the signature is checked against
    this module's own HS256 so the two never drift apart."""
    import jwt as pyjwt
    if not identity or any(c.isspace() for c in identity):
        raise TokenError(f"identity {identity!r} is not user@domain")
    if not issuer or re.search(r"[,\s]", issuer):
        raise TokenError(f"TRUST_DOMAIN {issuer!r} may not be empty or contain spaces or commas")
    issued = int(time.time()) if now is None else int(now)
    claims: dict[str, object] = {"iat": issued, "iss": issuer}
    if lifetime is not None and lifetime >= 0:
        claims["exp"] = issued + int(lifetime)
    claims["jti"] = jti if jti is not None else secrets.token_hex(16)
    claims["sub"] = identity
    scope = scope_of(authz)
    if scope:
        claims["scope"] = scope
    # HTCondor's tokens (jwt-cpp) carry no "typ" and their claims in name order: so do ours,
    # byte for byte the token HTCondor would make of the same claims.
    claims = dict(sorted(claims.items()))
    token = pyjwt.encode(claims, jwt_key(key), algorithm="HS256", headers={"kid": kid or POOL, "typ": None})
    head, body, signature = token.split(".")
    if _unb64(signature, "signature") != sign(f"{head}.{body}", key):
        raise TokenError("the JWT library's signature differs from HTCondor's recipe")
    return token


class Parsed:
    """A token split into its parts, nothing verified: ``header``, ``claims``,
    ``signing_input`` (``header.payload``, what a client sends) and ``signature``."""

    def __init__(self, header: dict, claims: dict, signing_input: str, signature: bytes | None):
        self.header = header
        self.claims = claims
        self.signing_input = signing_input
        self.signature = signature

    @property
    def kid(self) -> str:
        return str(self.header.get("kid", ""))

    @property
    def identity(self) -> str:
        sub = self.claims.get("sub")
        return sub if isinstance(sub, str) else ""

    @property
    def issuer(self) -> str:
        iss = self.claims.get("iss")
        return iss if isinstance(iss, str) else ""

    @property
    def scopes(self) -> list[str] | None:
        """The authorization levels the token is limited to (None: not limited)."""
        scope = self.claims.get("scope")
        if not isinstance(scope, str) or not scope.strip():
            return None
        return [part[len("condor:/"):].upper() for part in scope.split() if part.startswith("condor:/")]


def parse(token: str, signed: bool = True) -> Parsed:
    """Split ``token`` (``header.payload.signature``, or ``header.payload`` when not
    ``signed``); ``TokenError`` saying what is wrong with it."""
    if not isinstance(token, str):
        raise TokenError("a token must be text")
    token = token.strip()
    if len(token) > MAX_TOKEN_BYTES:
        raise TokenError(f"the token is longer than {MAX_TOKEN_BYTES} bytes")
    parts = token.split(".")
    if len(parts) != (3 if signed else 2):
        raise TokenError("not a JWT (header.payload.signature)" if signed
                         else "not a JWT's header.payload")
    head, body = _unb64(parts[0], "header"), _unb64(parts[1], "payload")
    try:
        header = json.loads(head)
        claims = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise TokenError("the token's header or payload is not JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenError("the token's header and payload must be JSON objects")
    if header.get("alg") != "HS256":
        raise TokenError(f"the token's algorithm {header.get('alg')!r} is not HS256")
    if not isinstance(header.get("kid"), str) or not header["kid"]:
        raise TokenError("the token names no signing key (kid)")
    for name in ("iat", "exp"):
        if name in claims and (isinstance(claims[name], bool) or not isinstance(claims[name], int)):
            raise TokenError(f"the token's {name} claim is not a time")
    signature = _unb64(parts[2], "signature") if signed else None
    return Parsed(header, claims, f"{parts[0]}.{parts[1]}", signature)


def verify(token: str, get: Lookup) -> Parsed:
    """Parse ``token`` and check its signature under the pool's key it names."""
    parsed = parse(token)
    expected = sign(parsed.signing_input, read_signing_key(parsed.kid, get))
    if parsed.signature is None or not hmac.compare_digest(parsed.signature, expected):
        raise TokenError(f"the token's signature does not verify under signing key {parsed.kid}")
    return parsed


def check_claims(parsed: Parsed, get: Lookup, now: float | None = None,
                 revoked: Callable[[dict], bool] | None = None) -> None:
    """What HTCondor's server checks of a presented token besides its signature:
    issuer, expiry, SEC_TOKEN_MAX_AGE and revocation (``TokenError`` saying which)."""
    now = time.time() if now is None else now
    domain = trust_domain(get)
    if parsed.issuer != domain:
        raise TokenError(f"the token was issued by {parsed.issuer!r}, not this pool's trust domain {domain!r}")
    if not parsed.identity:
        raise TokenError("the token has no subject (sub)")
    exp = parsed.claims.get("exp")
    if isinstance(exp, int) and now > exp:
        raise TokenError(f"the token expired {int(now - exp)} seconds ago (exp {exp})")
    max_age = (get("SEC_TOKEN_MAX_AGE") or "").strip()
    iat = parsed.claims.get("iat")
    if max_age and isinstance(iat, int):
        try:
            limit = int(max_age)
        except ValueError:
            limit = -1
        if limit >= 0 and now - iat > limit:
            raise TokenError(f"the token is {int(now - iat)} seconds old, more than SEC_TOKEN_MAX_AGE {limit}")
    if revoked is not None and revoked(parsed.claims):
        raise TokenError(f"the token (jti {parsed.claims.get('jti')}) has been revoked")


def revocation_check(get: Lookup) -> Callable[[dict], bool] | None:
    """SEC_TOKEN_REVOCATION_EXPR (or the older SEC_TOKEN_BLACKLIST_EXPR) as a test of
    a token's claims; None when neither is set.  A bad expression revokes every token."""
    text = (get("SEC_TOKEN_REVOCATION_EXPR") or get("SEC_TOKEN_BLACKLIST_EXPR") or "").strip()
    if not text:
        return None
    from jobledger.eventcore.classad import ClassAd, ExprTree
    try:
        expr = ExprTree(text)
    except Exception:   # noqa: BLE001 - HTCondor's caution: unusable means revoked
        return lambda claims: True

    def revoked(claims: dict) -> bool:
        ad = ClassAd({k: v for k, v in claims.items()
                      if isinstance(v, (str, int, float, bool)) and re.fullmatch(r"[A-Za-z_]\w*", k)})
        try:
            value = expr.eval(ad)
        except Exception:   # noqa: BLE001
            return True
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)):
            return value != 0
        return True     # undefined or an error: suspect, as HTCondor takes it
    return revoked


def trust_domain(get: Lookup) -> str:
    """TRUST_DOMAIN (HTCondor's default: UID_DOMAIN)."""
    return (get("TRUST_DOMAIN") or get("UID_DOMAIN") or "").strip()


def token_directories(get: Lookup) -> list[Path]:
    """Where a client looks for tokens: SEC_TOKEN_DIRECTORY (default ``~/.condor/tokens.d``)."""
    directory = (get("SEC_TOKEN_DIRECTORY") or "").strip()
    if directory:
        return [Path(directory)]
    return [Path.home() / ".condor" / "tokens.d"]


def token_files(get: Lookup) -> Iterator[Path]:
    """Token files in sorted order, skipping the names LOCAL_CONFIG_DIR_EXCLUDE_REGEXP skips."""
    exclude = get("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP") or r"^((\..*)|(.*~)|(#.*)|(.*\.rpmsave)|(.*\.rpmnew))$"
    try:
        skip = re.compile(exclude)
    except re.error:
        skip = re.compile(r"^\.")
    for directory in token_directories(get):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            path = directory / name
            if not skip.match(name) and path.is_file():
                yield path


def tokens_in(path: Path) -> Iterator[str]:
    """The tokens of one file (a line each; blank and ``#`` lines skipped), bounded in size."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TOKEN_BYTES * 16)
    except OSError:
        return
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


def find_token(get: Lookup, issuer: str, keys: Iterable[str]) -> tuple[str, Path | None] | None:
    """The first token a client holds for a server of trust domain ``issuer`` that
    has signing keys ``keys`` (HTCondor's findTokens): (token, file)."""
    keys = set(keys)
    for path in token_files(get):
        for line in tokens_in(path):
            try:
                parsed = parse(line)
            except TokenError:
                continue
            if (not keys or parsed.kid in keys) and (not issuer or parsed.issuer == issuer):
                return line, path
    return None
