"""The exporter's web configuration file, in the format of Prometheus's exporter-toolkit:

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # optional, with client_ca_file
      client_ca_file: ca.crt
      min_version: TLS12                             # optional: TLS12 | TLS13
    basic_auth_users:
      alice: $2y$10$...                              # bcrypt hashes only, as the toolkit

Relative paths are relative to the file. Unknown keys are errors (the toolkit refuses them too).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path

TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version"}
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "RequestClientCert": ssl.CERT_OPTIONAL,
    "RequireAnyClientCert": ssl.CERT_REQUIRED,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
DEFAULT_COST = 12  # bcrypt.gensalt's, for a stand-in hash when no user's cost can be read


class WebConfigError(ValueError):
    """The web config file is unusable (the message says where and why)."""


@dataclass
class WebConfig:
    """TLS settings and basic-auth users (user -> bcrypt hash)."""

    cert_file: Path | None = None
    key_file: Path | None = None
    client_ca_file: Path | None = None
    client_auth_type: str = "NoClientCert"
    min_version: str = "TLS12"
    users: dict[str, bytes] = field(default_factory=dict)
    _verified: dict[tuple[str, bytes], bool] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    _stand_in_hash: bytes | None = field(default=None, repr=False)

    @property
    def tls(self) -> bool:
        return self.cert_file is not None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The server's TLS context, or None without TLS."""
        if self.cert_file is None or self.key_file is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = TLS_VERSIONS[self.min_version]
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
            if self.client_ca_file is not None:
                context.load_verify_locations(self.client_ca_file)
        except (OSError, ssl.SSLError) as error:
            raise WebConfigError(f"cannot load the TLS certificate or key: {error}") from None
        context.verify_mode = CLIENT_AUTH[self.client_auth_type]
        return context

    def known(self, header: str | None) -> bool | None:
        """Whether the Authorization header may pass, when that needs no bcrypt: True without users; False
        for a header that is not basic auth or names no user; a verdict remembered from an earlier check.
        None when `authorized` must check the password (slow on purpose: run it off an event loop)."""
        if not self.users:
            return True
        parsed = _basic(header)
        if parsed is None:
            return False
        with self._lock:  # an unknown user is checked as a known one is: its name is not told by the time
            return self._verified.get(self._key(*parsed))

    def authorized(self, header: str | None) -> bool:
        """True when no users are configured, or the Authorization header names one with the right password.
        A verdict is remembered (by a keyed hash of the password): scrapes come every second."""
        known = self.known(header)
        if known is not None:
            return known
        user, password = _basic(header) or ("", "")
        import bcrypt

        try:
            verdict = bcrypt.checkpw(password.encode(), self.users.get(user) or self._stand_in())
        except ValueError:
            verdict = False
        verdict = verdict and user in self.users
        with self._lock:
            if len(self._verified) > 1024:
                self._verified.clear()
            self._verified[self._key(user, password)] = verdict
        return verdict

    def _stand_in(self) -> bytes:
        """A hash of a random password at the users' cost, which an unknown user's password is checked
        against (as exporter-toolkit does), so that a reply takes as long whether the name exists or not."""
        if self._stand_in_hash is None:
            import bcrypt

            cost = max((_cost(hashed) for hashed in self.users.values()), default=DEFAULT_COST)
            self._stand_in_hash = bcrypt.hashpw(secrets.token_bytes(16), bcrypt.gensalt(rounds=cost))
        return self._stand_in_hash

    def _key(self, user: str, password: str) -> tuple[str, bytes]:
        """What a verdict is remembered by: never the password itself, nor a plain hash of it."""
        return user, hmac.new(self._secret, password.encode(), hashlib.sha256).digest()


def _cost(hashed: bytes) -> int:
    """The cost factor of a bcrypt hash (``$2y$12$...`` -> 12), within bcrypt's range."""
    parts = hashed.split(b"$")
    return min(max(int(parts[2]), 4), 31) if len(parts) > 3 and parts[2].isdigit() else DEFAULT_COST


def _basic(header: str | None) -> tuple[str, str] | None:
    """(user, password) from a basic-auth Authorization header, or None when it is not one."""
    if not header or not header.startswith("Basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return user, password


def _path(base: Path, value: object, key: str) -> Path:
    if not isinstance(value, str) or not value:
        raise WebConfigError(f"tls_server_config.{key} must be a file path")
    path = (base / value).expanduser()
    if not path.is_file():
        raise WebConfigError(f"tls_server_config.{key}: {path} is not a readable file")
    return path


def _tls(config: WebConfig, tls: object, base: Path) -> None:
    if not isinstance(tls, dict):
        raise WebConfigError("tls_server_config must be a mapping")
    unknown = set(tls) - TLS_KEYS
    if unknown:
        raise WebConfigError(f"tls_server_config: unknown keys {sorted(unknown)}")
    if "cert_file" not in tls or "key_file" not in tls:
        raise WebConfigError("tls_server_config needs both cert_file and key_file")
    config.cert_file = _path(base, tls["cert_file"], "cert_file")
    config.key_file = _path(base, tls["key_file"], "key_file")
    auth = tls.get("client_auth_type", "NoClientCert")
    if auth not in CLIENT_AUTH:
        raise WebConfigError(f"tls_server_config.client_auth_type must be one of {sorted(CLIENT_AUTH)}")
    config.client_auth_type = auth
    if "client_ca_file" in tls:
        config.client_ca_file = _path(base, tls["client_ca_file"], "client_ca_file")
    elif auth == "RequireAndVerifyClientCert":
        raise WebConfigError("client_auth_type RequireAndVerifyClientCert needs client_ca_file")
    version = tls.get("min_version", "TLS12")
    if version not in TLS_VERSIONS:
        raise WebConfigError(f"tls_server_config.min_version must be one of {sorted(TLS_VERSIONS)}")
    config.min_version = version


def _users(config: WebConfig, users: object) -> None:
    if not isinstance(users, dict):
        raise WebConfigError("basic_auth_users must map user names to bcrypt hashes")
    for user, hashed in users.items():
        if not isinstance(user, str) or ":" in user or not user:
            raise WebConfigError(f"basic_auth_users: bad user name {user!r}")
        if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise WebConfigError(
                f"basic_auth_users.{user}: not a bcrypt hash (make one with "
                "`python -c 'import bcrypt; print(bcrypt.hashpw(b\"PASSWORD\", bcrypt.gensalt()).decode())'`)"
            )
        config.users[user] = hashed.encode()


def load_web_config(path: Path) -> WebConfig:
    """Read and check a web config file; raises WebConfigError with the reason."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise WebConfigError(f"cannot read {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise WebConfigError(f"{path} is not valid YAML: {error}") from None
    config = WebConfig()
    if data is None:
        return config
    if not isinstance(data, dict):
        raise WebConfigError(f"{path}: the top level must be a mapping")
    unknown = set(data) - {"tls_server_config", "basic_auth_users"}
    if unknown:
        raise WebConfigError(
            f"{path}: unsupported keys {sorted(unknown)} (tls_server_config, basic_auth_users)"
        )
    base = Path(path).resolve().parent
    if data.get("tls_server_config") is not None:
        _tls(config, data["tls_server_config"], base)
    if data.get("basic_auth_users") is not None:
        _users(config, data["basic_auth_users"])
    return config
