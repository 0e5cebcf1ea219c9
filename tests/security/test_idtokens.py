"""IDTOKENS as HTCondor makes them: key files, key derivation, claims, the two tools.

The recipe below is written here independently of daemons/idtokens.py, from HTCondor's
source (condor_auth_passwd.cpp: generate_token and getTokenSigningKey): the key file is
XORed with DE AD BE EF, the POOL key is used twice over, HKDF-SHA256 with salt
"htcondor" and info "master jwt" gives the HS256 key.  It uses ``cryptography``'s HKDF,
not our own, so a mistake in either shows.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from jobledger.daemons import idtokens
from jobledger.eventcore.errors import TokenError

RAW_KEY = bytes(range(1, 33))
# RAW_KEY as HTCondor stores it in passwords.d/POOL (XOR DE AD BE EF)
KEY_FILE = bytes.fromhex("dfafbdebdbabb9e7d7a7b5e3d3a3b1ffcfbfadfbcbbba9f7c7b7a5f3c3b3a1cf")
JTI = "0123456789abcdef0123456789abcdef"
# Made by the recipe below (header and claims serialized as jwt-cpp does: no "typ",
# claims in name order) for alice@example.net, trust domain pool.example.net, iat
# 1700000000, lifetime 3600, -authz READ -authz WRITE.
GOLDEN = ("eyJhbGciOiJIUzI1NiIsImtpZCI6IlBPT0wifQ."
          "eyJleHAiOjE3MDAwMDM2MDAsImlhdCI6MTcwMDAwMDAwMCwiaXNzIjoicG9vbC5leGFtcGxlLm5ldCIsImp0aSI6"
          "IjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVmIiwic2NvcGUiOiJjb25kb3I6L1JFQUQgY29uZG9yOi9X"
          "UklURSIsInN1YiI6ImFsaWNlQGV4YW1wbGUubmV0In0."
          "uKEkG34wS9vQKjgFlAKkQesW4M49j8MVyk86dD01ZAo")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def recipe_key(file_bytes: bytes, pool: bool) -> bytes:
    plain = bytes(b ^ (0xDE, 0xAD, 0xBE, 0xEF)[i % 4] for i, b in enumerate(file_bytes))
    ikm = plain + plain if pool else plain
    return HKDF(algorithm=SHA256(), length=32, salt=b"htcondor", info=b"master jwt").derive(ikm)


def recipe_sign(file_bytes: bytes, pool: bool, header: dict, claims: dict) -> str:
    head = _b64(json.dumps(header, separators=(",", ":")).encode())
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    sig = hmac.new(recipe_key(file_bytes, pool), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(sig)}"


def recipe_verifies(token: str, file_bytes: bytes, pool: bool) -> bool:
    head, body, sig = token.split(".")
    expected = hmac.new(recipe_key(file_bytes, pool), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return hmac.compare_digest(_b64(expected), sig)


@pytest.fixture
def pool_config(tmp_path):
    """A config lookup with the key files of a pool in tmp_path."""
    passwords = tmp_path / "passwords.d"
    passwords.mkdir()
    (passwords / "POOL").write_bytes(KEY_FILE)
    values = {"SEC_PASSWORD_DIRECTORY": str(passwords),
              "SEC_TOKEN_POOL_SIGNING_KEY_FILE": str(passwords / "POOL"),
              "TRUST_DOMAIN": "pool.example.net",
              "SEC_TOKEN_DIRECTORY": str(tmp_path / "tokens.d")}
    return values


def test_golden_vector_made_here_is_htcondors_byte_for_byte(pool_config):
    key = idtokens.read_signing_key("POOL", pool_config.get)
    assert key == RAW_KEY + RAW_KEY             # the POOL key is used twice over
    made = idtokens.create_token("alice@example.net", "pool.example.net", key, "POOL",
                                 ["READ", "WRITE"], 3600, now=1_700_000_000, jti=JTI)
    assert made == GOLDEN
    assert recipe_verifies(made, KEY_FILE, pool=True)


def test_golden_vector_made_by_the_recipe_is_accepted(pool_config):
    parsed = idtokens.verify(GOLDEN, pool_config.get)
    assert parsed.identity == "alice@example.net"
    assert parsed.kid == "POOL" and parsed.issuer == "pool.example.net"
    assert parsed.scopes == ["READ", "WRITE"]
    assert parsed.claims["exp"] == 1_700_003_600 and parsed.claims["jti"] == JTI
    idtokens.check_claims(parsed, pool_config.get, now=1_700_000_100)
    with pytest.raises(TokenError, match="expired 1 seconds ago"):
        idtokens.check_claims(parsed, pool_config.get, now=1_700_003_601)


def test_named_keys_are_not_doubled_both_ways(pool_config, tmp_path):
    other = os.urandom(48)
    (tmp_path / "passwords.d" / "site2").write_bytes(idtokens.scramble(other))
    claims = {"iat": 1, "iss": "pool.example.net", "jti": "ab" * 16, "sub": "bob@example.net"}
    theirs = recipe_sign(idtokens.scramble(other), False, {"alg": "HS256", "kid": "site2"}, claims)
    assert idtokens.verify(theirs, pool_config.get).identity == "bob@example.net"
    ours = idtokens.create_token("bob@example.net", "pool.example.net",
                                 idtokens.read_signing_key("site2", pool_config.get), "site2")
    assert recipe_verifies(ours, idtokens.scramble(other), pool=False)
    assert not recipe_verifies(ours, idtokens.scramble(other), pool=True)


def test_a_token_of_another_key_or_tampered_does_not_verify(pool_config):
    foreign = recipe_sign(os.urandom(32), True, {"alg": "HS256", "kid": "POOL"},
                          {"iat": 1, "iss": "pool.example.net", "sub": "mallory@example.net"})
    with pytest.raises(TokenError, match="does not verify under signing key POOL"):
        idtokens.verify(foreign, pool_config.get)
    head, body, sig = GOLDEN.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=="))
    claims["sub"] = "root@example.net"
    forged = f"{head}.{_b64(json.dumps(claims).encode())}.{sig}"
    with pytest.raises(TokenError, match="does not verify"):
        idtokens.verify(forged, pool_config.get)


@pytest.mark.parametrize("text, why", [
    ("", "not a JWT"),
    ("a.b", "not a JWT"),
    ("!!.e30.AA", "not base64url"),
    (_b64(b'{"alg":"none","kid":"POOL"}') + ".e30.", "algorithm 'none'"),
    (_b64(b'{"alg":"HS256"}') + ".e30.AA", "no signing key"),
    (_b64(b'[1]') + ".e30.AA", "JSON objects"),
    (_b64(b'{"alg":"HS256","kid":"POOL"}') + "." + _b64(b'{"exp":"soon"}') + ".AA", "exp claim"),
    ("x" * 20000, "longer than"),
])
def test_bad_tokens_are_named(text, why):
    with pytest.raises(TokenError, match=why):
        idtokens.parse(text)


def test_claims_checks_issuer_age_and_revocation(pool_config):
    key = idtokens.read_signing_key("POOL", pool_config.get)
    token = idtokens.create_token("carol@example.net", "other.domain", key, now=1000, jti="c0ffee")
    parsed = idtokens.verify(token, pool_config.get)
    with pytest.raises(TokenError, match="not this pool's trust domain 'pool.example.net'"):
        idtokens.check_claims(parsed, pool_config.get, now=1001)
    parsed = idtokens.verify(idtokens.create_token("carol@example.net", "pool.example.net", key,
                                                   now=1000, jti="c0ffee"), pool_config.get)
    idtokens.check_claims(parsed, pool_config.get, now=10**9)       # no exp: never expires
    aged = dict(pool_config, SEC_TOKEN_MAX_AGE="60")
    with pytest.raises(TokenError, match="more than SEC_TOKEN_MAX_AGE 60"):
        idtokens.check_claims(parsed, aged.get, now=1061)
    revoking = dict(pool_config, SEC_TOKEN_REVOCATION_EXPR='member(jti, {"dead", "c0ffee"})')
    with pytest.raises(TokenError, match="jti c0ffee.*revoked"):
        idtokens.check_claims(parsed, revoking.get, now=1001, revoked=idtokens.revocation_check(revoking.get))
    sparing = dict(pool_config, SEC_TOKEN_REVOCATION_EXPR='sub == "mallory@example.net"')
    idtokens.check_claims(parsed, sparing.get, now=1001, revoked=idtokens.revocation_check(sparing.get))
    broken = dict(pool_config, SEC_TOKEN_REVOCATION_EXPR='((')    # HTCondor's caution: revokes all
    with pytest.raises(TokenError, match="revoked"):
        idtokens.check_claims(parsed, broken.get, now=1001, revoked=idtokens.revocation_check(broken.get))


def test_a_new_signing_key_is_stored_as_htcondor_stores_it(tmp_path):
    path = tmp_path / "passwords.d" / "POOL"
    raw = idtokens.write_signing_key(path)
    assert len(raw) == idtokens.KEY_BYTES
    assert path.read_bytes() == idtokens.scramble(raw)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert idtokens.write_signing_key(path) == raw          # an existing key is never replaced


def _tool(name: str, args: list[str], config: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, CONDOR_CONFIG=str(config))
    return subprocess.run([str(Path(sys.executable).parent / name), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_condor_token_create_and_list(tmp_path, pool_config):
    config = tmp_path / "condor_config"
    config.write_text("".join(f"{k} = {v}\n" for k, v in pool_config.items()))
    made = _tool("condor_token_create", ["-identity", "alice@example.net", "-authz", "READ",
                                         "-lifetime", "600"], config)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert recipe_verifies(token, KEY_FILE, pool=True)
    parsed = idtokens.parse(token)
    assert parsed.scopes == ["READ"] and parsed.claims["exp"] - parsed.claims["iat"] == 600
    assert len(parsed.claims["jti"]) == 32

    made = _tool("condor_token_create", ["-identity", "bob@example.net", "-token", "bob"], config)
    assert made.returncode == 0 and made.stdout == "", made.stderr
    written = tmp_path / "tokens.d" / "bob"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    again = _tool("condor_token_create", ["-identity", "bob@example.net", "-token", "bob"], config)
    assert again.returncode == 1 and "already exists" in again.stderr

    listed = _tool("condor_token_list", [], config)
    assert listed.returncode == 0, listed.stderr
    line, = listed.stdout.splitlines()
    assert line.startswith('Header: {"alg":"HS256","kid":"POOL"} Payload: {')
    assert '"sub":"bob@example.net"' in line and line.endswith(f"File: {written}")


def test_condor_token_create_errors_are_one_line(tmp_path, pool_config):
    config = tmp_path / "condor_config"
    config.write_text("".join(f"{k} = {v}\n" for k, v in pool_config.items()))
    bad = _tool("condor_token_create", ["-identity", "a@b", "-authz", "EVERYTHING"], config)
    assert bad.returncode == 1 and "unknown authorization level 'EVERYTHING'" in bad.stderr
    missing = _tool("condor_token_create", ["-identity", "a@b", "-key", "nosuch"], config)
    assert missing.returncode == 2
    assert "passwords.d/nosuch" in missing.stderr and "Traceback" not in missing.stderr
    none = _tool("condor_token_create", [], config)
    assert none.returncode == 1 and "-identity is required" in none.stderr
