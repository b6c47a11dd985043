# syntax=docker/dockerfile:1
# churn-server and the churn operator CLI on Debian slim, running as an unprivileged user with its
# data under /data. See deploy/README.md for compose, systemd and reverse-proxy examples.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY examples examples
COPY migrations migrations
# Registry and target as build caches, so a rebuild after a source change compiles only churn.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p churn-server -p churn-cli \
    && install -D -m 0755 target/release/churn-server target/release/churn -t /out

FROM debian:bookworm-slim
# curl serves the health check only. Versions follow the base image's Debian release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 churn \
    && useradd --system --uid 10001 --gid churn --home-dir /data --shell /usr/sbin/nologin churn \
    && mkdir /data \
    && chown churn:churn /data
COPY --from=build /out/ /usr/local/bin/

# A non-loopback bind without TLS answers 403 "HTTPS is required" to everything but /health
# and /ready, unless a trusted proxy forwards HTTPS (CHURN_TRUSTED_PROXIES) or
# CHURN_ALLOW_HTTP=true: docs/operations.md, "Deploying".
ENV CHURN_BIND=0.0.0.0:8080 \
    CHURN_DATA_DIR=/data \
    CHURN_DATABASE_URL=sqlite:///data/churn.db

# Numeric, so that a platform can tell it is not root without reading /etc/passwd.
USER 10001:10001
WORKDIR /data
# The SQLite database, the encryption key (encryption.key) and the email outbox.
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/health"]
ENTRYPOINT ["churn-server"]
