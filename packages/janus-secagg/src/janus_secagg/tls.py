"""TLS for the links to the servers (issue 16), with Python's ``ssl``: the server presents a
certificate, the client pins it.

The pin is the server's own certificate from the operator-signed enrolment file: it is the
only trust anchor of the client's context (OpenSSL's partial-chain flag lets a leaf be one),
and after the handshake the client also compares the certificate's SHA-256 with the pin's, so a
certificate issued by the same CA to someone else is refused too. Host names are not checked:
the pin is stricter. Servers may require client certificates signed by a CA of their choice.
"""

import hashlib
import os
import socket
import ssl
from pathlib import Path

from .enrolment import certificate_pem
from .errors import CertificatePinError


def _der(pem: str) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pem)


class PinnedTLS:
    """Client side of TLS to one server whose certificate is pinned.

    Parameters
    ----------
    certificate : str or bytes
        The server's PEM certificate (``Enrolment.b_certificate``).
    client_cert, client_key : str or Path, optional
        This client's certificate chain and key (PEM files), for a server that requires them.

    Raises
    ------
    ValueError
        If `certificate` is not PEM, or only one of `client_cert`, `client_key` is given.
    """

    def __init__(self, certificate, client_cert=None, client_key=None):
        self.certificate = certificate_pem(certificate, "certificate")
        if (client_cert is None) != (client_key is None):
            raise ValueError("pass both `client_cert` and `client_key`, or neither")
        for path, name in ((client_cert, "client_cert"), (client_key, "client_key")):
            if path is not None and not os.path.isfile(path):
                raise ValueError(f"`{name}` {path} is not a file")
        self.client_cert, self.client_key = client_cert, client_key
        self.fingerprint = hashlib.sha256(_der(self.certificate)).hexdigest()
        self._context: ssl.SSLContext | None = None

    def __getstate__(self) -> dict:  # an SSLContext does not pickle (Ray ships mods to workers)
        return {**self.__dict__, "_context": None}

    def context(self) -> ssl.SSLContext:
        """The client ``SSLContext``: TLS >= 1.2, the pinned certificate as sole anchor."""
        if self._context is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.check_hostname = False  # the pin names the server, not a host name
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
            ctx.load_verify_locations(cadata=self.certificate)
            if self.client_cert is not None:
                ctx.load_cert_chain(str(self.client_cert), str(self.client_key))
            self._context = ctx
        return self._context

    def check(self, ssl_object, address: str) -> None:
        """Raise ``CertificatePinError`` unless the peer's certificate is the pinned one."""
        der = ssl_object.getpeercert(binary_form=True)
        got = hashlib.sha256(der or b"").hexdigest()
        if got != self.fingerprint:
            raise CertificatePinError(
                f"{address} presented TLS certificate sha256:{got[:16]}..., not the one the "
                f"enrolment pins (sha256:{self.fingerprint[:16]}...)"
            )

    def wrap(self, sock: socket.socket, host: str, port: int) -> ssl.SSLSocket:
        """Run the handshake on a connected socket and check the pin.

        Raises
        ------
        CertificatePinError
            If the server's certificate is not the pinned one.
        ConnectionError
            If the handshake fails otherwise (e.g. the server does not speak TLS).
        """
        address = f"{host}:{port}"
        try:
            tls = self.context().wrap_socket(sock, server_hostname=host)
        except ssl.SSLCertVerificationError as error:
            sock.close()
            raise CertificatePinError(
                f"{address} presented a TLS certificate other than the one the enrolment pins "
                f"(sha256:{self.fingerprint[:16]}...): {error.verify_message}"
            ) from None
        except (ssl.SSLError, TimeoutError, ConnectionError) as error:
            sock.close()
            raise ConnectionError(
                f"TLS handshake with {address} failed ({getattr(error, 'reason', error)}): the "
                "server may serve plain TCP (--insecure), require a client certificate "
                "(--tls-client-ca: pass client_cert= and client_key=), or be at its connection "
                "limit (its log says so)"
            ) from None
        try:
            self.check(tls, address)
        except CertificatePinError:
            tls.close()
            raise
        return tls


def server_context(cert_file, key_file, client_ca=None) -> ssl.SSLContext:
    """A server ``SSLContext`` presenting `cert_file` (PEM chain) with `key_file`.

    Parameters
    ----------
    cert_file, key_file : str or Path
    client_ca : str or Path, optional
        PEM CA certificate(s); when given, clients must present a certificate signed by one.

    Raises
    ------
    ValueError
        If a file is missing or does not hold a matching PEM certificate and key (the message
        names the file).
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    for path, name in ((cert_file, "tls_cert"), (key_file, "tls_key"), (client_ca, "client_ca")):
        if path is not None and not Path(path).is_file():
            raise ValueError(f"`{name}` {path}: no such file")
    try:
        ctx.load_cert_chain(str(cert_file), str(key_file))
    except (ssl.SSLError, OSError) as error:
        raise ValueError(
            f"`tls_cert` {cert_file} / `tls_key` {key_file}: not a PEM certificate and its "
            f"key ({error})"
        ) from None
    if client_ca is not None:
        try:
            ctx.load_verify_locations(cafile=str(client_ca))
        except (ssl.SSLError, OSError) as error:
            raise ValueError(f"`client_ca` {client_ca}: not a PEM certificate ({error})") from None
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
