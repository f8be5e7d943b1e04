"""The Dask scheduler of ``dmargin select --scheduler``: reached within a bounded
time, or refused in one line.

An address or a scheduler file; a ``tls://`` scheduler with this client's TLS
settings from the dask config.  Nothing listening, a silent port, a service that
is not Dask and a worker's address each end in a :class:`~dmargin.cli._io.UserError`
within about ``_CONNECT_TIMEOUT``.  distributed itself is reached through
:mod:`dmargin._cluster`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .._cluster import (
    ask_identity,
    check_comm_scheme,
    client_security,
    open_client,
    parse_duration,
)
from ._io import UserError

# How long a scheduler may take to answer before the command gives up.
_CONNECT_TIMEOUT = "10s"


def scheduler_address(address: str | None) -> str | None:
    """The address to connect to; a ``.json`` address is a scheduler file, read here.

    distributed would poll for a missing scheduler file forever, and fails with
    a bare AssertionError on one without an address.
    """
    if address is None or not address.endswith(".json"):
        return address
    path = Path(address)
    if not path.is_file():
        raise UserError(
            f"--scheduler {address}: no such file. A scheduler file is written by "
            f"'dask scheduler --scheduler-file {address}'; start the scheduler first "
            "or pass its tcp:// address."
        )
    for _ in range(10):  # the scheduler may be writing it right now
        try:
            found = json.loads(path.read_text()).get("address")
        except (ValueError, AttributeError):
            found = None
        except OSError as exc:
            raise UserError(f"--scheduler {address}: cannot read it ({exc.strerror}).") from None
        if isinstance(found, str) and found:
            return found
        time.sleep(0.1)
    raise UserError(
        f"--scheduler {address} is not a Dask scheduler file (no JSON 'address' "
        "entry); pass the file 'dask scheduler --scheduler-file' wrote, or a "
        "tcp:// address."
    )


# What a wrong --scheduler usually is instead of the scheduler's port.
_ADDRESS_HINT = (
    "check that it is the scheduler's address (tcp://host:8786 by default), not "
    "the dashboard's (8787) nor another service's"
)
# The dask settings a tls:// scheduler needs from this client (Security reads them).
_TLS_HINT = (
    "give this client's TLS settings in the dask config: the environment variables "
    "DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT "
    "and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY, or distributed.comm.tls in a dask "
    "config file (like deploy/tls/dask-tls.yaml)"
)


def _security(address, where):
    """The ``Security`` a Client of ``address`` uses, and its connection arguments.

    Built here, and given to the Client, so that the probe and the Client agree; a
    ``tls://`` address without this client's certificates would otherwise end in
    distributed's TypeError.
    """
    try:
        security, args = client_security(address)
    except (OSError, ValueError, ImportError) as exc:  # a missing or bad certificate file
        raise UserError(
            f"cannot reach the Dask scheduler at {where}: its TLS settings are "
            f"not usable ({exc}); {_TLS_HINT}."
        ) from None
    if address.startswith(("tls://", "wss://")) and args["ssl_context"] is None:
        raise UserError(
            f"cannot reach the Dask scheduler at {where}: a {address.split(':')[0]}"
            f":// scheduler needs this client's TLS settings (a CA file, a client "
            f"certificate and its key) and none are set; {_TLS_HINT}."
        )
    return security, args


def _host_port(address):
    """``(host, port)`` of ``tcp://host:port`` (``[::1]`` too), or None."""
    rest = address.split("://", 1)[-1]
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _what_answered(address, seconds=3.0):
    """What a server that does not speak Dask's protocol is, in a few words, or None.

    Asked again with a plain TCP connection and a line that is no request: an
    HTTP server answers with a status line (``HTTP/1.1 400 Bad Request``).
    """
    import socket

    where = _host_port(address) if address.startswith("tcp://") else None
    if where is None:
        return None
    try:
        with socket.create_connection(where, timeout=seconds) as sock:
            sock.sendall(b"DMARGIN-PROBE / HTTP/1.0\r\n\r\n")
            first = sock.recv(256)
    except OSError:
        return None
    if first.startswith(b"HTTP/"):
        status = first.split(b"\r\n", 1)[0].decode("latin-1").strip()
        return f"an HTTP server (it answers {status!r})"
    return None


def connect(address, given):
    """A Client of the scheduler at ``address`` (``given`` is what the user typed).

    A :class:`UserError` within about ``_CONNECT_TIMEOUT`` unless a Dask
    scheduler answers there: nothing listening, a silent port, a service that
    is not Dask, a worker, a ``tls://`` address without TLS settings.
    """
    if address is None:
        return None
    where = address + (f" (from {given})" if given != address else "")
    try:
        check_comm_scheme(address)
    except ValueError as exc:  # http://... (the dashboard's link) or a typo
        raise UserError(
            f"cannot reach the Dask scheduler at {where}: {exc}; {_ADDRESS_HINT}."
        ) from None
    security, args = _security(address, where)
    seconds = parse_duration(_CONNECT_TIMEOUT)
    try:
        reply = ask_identity(address, args, seconds)
    except TimeoutError:
        raise UserError(
            f"cannot reach the Dask scheduler at {where}: no Dask scheduler "
            f"answered within {seconds:g} s; {_ADDRESS_HINT}."
        ) from None
    except OSError as exc:  # refused, unreachable, hung up (CommClosedError), TLS refused
        raise UserError(
            f"cannot reach the Dask scheduler at {where}: {exc}. Start one with "
            f"'dask scheduler' or {_ADDRESS_HINT}."
        ) from None
    except RuntimeError as exc:  # e.g. tcp:// while the config requires encryption
        raise UserError(f"cannot reach the Dask scheduler at {where}: {exc}.") from None
    except Exception:  # a reply that is not a Dask message: anything can break
        # The exception says how the reply broke the decoder (an HTTP status line read as
        # a frame length is a MemoryError), not what answered: ask that directly.
        what = _what_answered(address) or "a service whose reply is not a Dask message"
        raise UserError(
            f"cannot reach the Dask scheduler at {where}: what answered there "
            f"does not speak Dask's protocol: it is {what}; "
            f"{_ADDRESS_HINT}."
        ) from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind in ("Worker", "Nanny"):
        raise UserError(
            f"{where} is a Dask {kind.lower()}, not the scheduler; pass the "
            "scheduler's address (the one the workers were given)."
        )
    if kind is None:
        raise UserError(
            f"cannot reach the Dask scheduler at {where}: what answered there is "
            f"not a Dask scheduler; {_ADDRESS_HINT}."
        )
    try:
        return open_client(address, _CONNECT_TIMEOUT, security)
    except (OSError, TimeoutError, ValueError, RuntimeError) as exc:  # gone since the probe
        raise UserError(
            f"cannot reach the Dask scheduler at {where}: {exc}. Start one with "
            "'dask scheduler' or check the address."
        ) from None


def dashboard_link(client):
    """The dashboard URL of ``client``'s scheduler, or None when it serves none."""
    try:
        return client.dashboard_link or None
    except (KeyError, AttributeError, TypeError, ValueError, OSError):
        return None
