"""The pool's Dask connection security, from its configuration.

``DASK_TLS_CA_FILE``, ``DASK_TLS_CERT`` and ``DASK_TLS_KEY`` name PEM files;
when any is set the pool talks to the Dask scheduler over TLS with
``distributed.Security`` (``require_encryption``), else plainly.
"""

from __future__ import annotations

KEYS = {"DASK_TLS_CA_FILE": "tls_ca_file", "DASK_TLS_CERT": "tls_client_cert",
        "DASK_TLS_KEY": "tls_client_key"}


def security_settings(config) -> dict | None:
    """The TLS file names ``config(name)`` gives, or None when none is configured."""
    found = {arg: config(name, "").strip() for name, arg in KEYS.items()}
    found = {arg: value for arg, value in found.items() if value}
    return found or None


def security_from(settings: dict | None):
    """A ``distributed.Security`` for ``settings`` (None: no TLS)."""
    if not settings:
        return None
    from distributed.security import Security
    return Security(require_encryption=True, **settings)
