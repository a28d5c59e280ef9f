"""mTLS client channels: a principal's own certificate, the deployment CA."""

from __future__ import annotations

import grpc

from shared.certs import Credentials


def channel_credentials(credentials: Credentials) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=credentials.ca_pem,
        private_key=credentials.key_pem,
        certificate_chain=credentials.cert_pem,
    )


def aio_channel(target: str, credentials: Credentials) -> grpc.aio.Channel:
    return grpc.aio.secure_channel(target, channel_credentials(credentials))


def sync_channel(target: str, credentials: Credentials) -> grpc.Channel:
    return grpc.secure_channel(target, channel_credentials(credentials))
